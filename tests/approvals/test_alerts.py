"""Alerts: audiences, the two-email split of the approvals alert, links with org=, opt-outs,
no empty report, and sending that never raises (locmem e-mail backend)."""

import datetime as dt

import pytest
from django.core import mail
from django.utils import timezone

from apps.notifications.audiences import resolve_audience
from apps.notifications.links import link
from apps.notifications.models import Notification, NotificationOptOut
from apps.notifications.services import (
    deciding_roles,
    notify_agent_budget_reached,
    notify_org_cap_reached,
    notify_run_parked,
    send_due_usage_reports,
)
from apps.orgs.models import Membership
from apps.runs.hooks import run_parked_hook
from tests.runs.factories import published_agent

from .factories import ADD_ONE, gated_agent, run_now


def inbox():
    return {message.to[0]: message for message in mail.outbox}


@pytest.mark.django_db
def test_every_link_carries_the_organization_with_the_right_separator(org, settings):
    # E-mailed links are absolute: they start at the console's public address.
    settings.AGENTICOS_PUBLIC_URL = "https://agents.example/"
    assert (
        link("/runs?tab=approvals", org)
        == f"https://agents.example/runs?tab=approvals&org={org.pk}"
    )
    assert link("/agents/5/", org) == f"https://agents.example/agents/5/?org={org.pk}"


@pytest.mark.django_db
def test_audiences_resolve_roles_when_sent_and_skip_a_chosen_member_who_left(
    org, owner, admin, builder, member, outsider, app_admin
):
    agent = published_agent(org, created_by=builder)
    run = run_now(member, org, agent, "hello")

    assert {u.pk for u in resolve_audience(org, ["admins"])} == {owner.pk, admin.pk, app_admin.pk}
    assert [u.pk for u in resolve_audience(org, ["owner"], agent=agent)] == [builder.pk]
    assert [u.pk for u in resolve_audience(org, ["initiator"], run=run)] == [member.pk]
    assert [
        u.pk for u in resolve_audience(org, ["chosen"], chosen_user_ids=[member.pk, outsider.pk])
    ] == [member.pk]
    Membership.objects.filter(organization=org, user=member).delete()
    assert resolve_audience(org, ["chosen"], chosen_user_ids=[member.pk]) == []


@pytest.mark.django_db
def test_the_initiator_of_a_scheduled_run_is_nobody(org, member):
    run = run_now(member, org, published_agent(org), "hello", surface="schedule")
    assert resolve_audience(org, ["initiator"], run=run) == []


@pytest.mark.django_db
def test_the_approval_alert_is_two_emails_split_by_approvals_decide(org, owner, admin, builder):
    mail.outbox.clear()
    run = run_now(builder, org, gated_agent(org), ADD_ONE)  # a builder starting their own agent
    assert run.status == "awaiting_approval"

    notify_run_parked(run_id=run.pk)

    received = inbox()
    assert set(received) == {owner.email, admin.email, builder.email}
    request = received[owner.email]
    assert "waiting on your approval" in request.subject
    assert f"/runs?tab=approvals&org={org.pk}" in request.body
    fact = received[builder.email]
    assert "held, not failed" in fact.body
    assert "http" not in fact.body and "/runs" not in fact.body
    assert "told" not in fact.body and "notified" not in fact.body
    assert all(role in fact.body for role in deciding_roles())
    assert Notification.objects.filter(user=owner, kind="approvals").exists()
    assert Notification.objects.get(user=builder, kind="approvals").link == ""


@pytest.mark.django_db(transaction=True)
def test_parking_sends_the_approval_alert_on_commit(org, owner, member):
    mail.outbox.clear()
    run_now(member, org, gated_agent(org), ADD_ONE)
    assert owner.email in inbox() and member.email in inbox()


@pytest.mark.django_db
def test_a_personal_opt_out_subtracts_last(org, owner, admin, member):
    NotificationOptOut.objects.create(user=admin, kind="approvals", channel="email")
    run = run_now(member, org, gated_agent(org), ADD_ONE)
    mail.outbox.clear()

    notify_run_parked(run_id=run.pk)

    assert admin.email not in inbox() and owner.email in inbox()
    assert Notification.objects.filter(
        user=admin, kind="approvals"
    ).exists()  # only e-mail was opted out


@pytest.mark.django_db
def test_the_budget_email_links_to_the_agent_and_reaches_admins_and_the_owner(
    org, owner, admin, builder, member
):
    agent = published_agent(org, created_by=builder)
    mail.outbox.clear()
    notify_agent_budget_reached(agent=agent, limit_usd="5.00")
    assert set(inbox()) >= {owner.email, admin.email, builder.email}
    assert member.email not in inbox()
    assert f"/agents/{agent.pk}/?org={org.pk}" in inbox()[builder.email].body


@pytest.mark.django_db
def test_the_organization_cap_alert_goes_to_admins_whatever_the_spec_says(
    org, owner, admin, builder
):
    published_agent(org, created_by=builder, alerts={"notify": ["owner"]})
    mail.outbox.clear()
    notify_org_cap_reached(organization=org)
    assert set(inbox()) == {owner.email, admin.email}


@pytest.mark.django_db
def test_usage_reports_are_off_by_default_and_an_agent_that_ran_nothing_gets_none(
    org, owner, member, builder
):
    quiet = published_agent(
        org, name="Quiet", created_by=builder, alerts={"usage": {"weekly": True}}
    )
    busy = published_agent(org, name="Busy", created_by=builder, alerts={"usage": {"weekly": True}})
    silent_by_default = published_agent(org, name="Default", created_by=builder)
    for agent in (busy, silent_by_default):
        run_now(member, org, agent, "hello")
    monday = (timezone.now() + dt.timedelta(days=7 - timezone.now().weekday())).date()
    mail.outbox.clear()
    assert send_due_usage_reports(monday) >= 1
    subjects = [message.subject for message in mail.outbox]
    assert any(subject.startswith("Busy: 1 runs") for subject in subjects)
    assert not any(subject.startswith(("Quiet", "Default")) for subject in subjects)
    assert {message.to[0] for message in mail.outbox} == {
        owner.email,
        builder.email,
    }  # admins + the agent's owner
    assert quiet.pk != busy.pk


@pytest.mark.django_db
def test_a_usage_report_goes_out_once_per_period(org, owner, member, builder):
    agent = published_agent(
        org, created_by=builder, alerts={"usage": {"monthly": True, "audience": ["owner"]}}
    )
    run_now(member, org, agent, "hello")
    next_month = (timezone.now().date().replace(day=28) + dt.timedelta(days=4)).replace(day=1)
    mail.outbox.clear()
    assert send_due_usage_reports(next_month) == 1
    assert send_due_usage_reports(next_month) == 0
    assert [message.to for message in mail.outbox] == [[builder.email]]


@pytest.mark.django_db
def test_sending_never_raises_into_the_caller(org, owner, member, settings):
    run = run_now(member, org, gated_agent(org), ADD_ONE)
    settings.EMAIL_BACKEND = "tests.approvals.broken_mail.BrokenBackend"
    assert notify_run_parked(run_id=run.pk) == 0
    for receiver in run_parked_hook.receivers:  # what the runner's hook calls: no exception
        receiver(run_id=run.pk)
    assert run_parked_hook.receivers  # registered by apps.notifications at start
    assert notify_run_parked(run_id=999_999) == 0


@pytest.mark.django_db
def test_a_spec_audience_for_the_budget_alert_replaces_the_default(org, owner, admin, builder):
    agent = published_agent(org, created_by=builder, alerts={"notify": ["owner"]})
    mail.outbox.clear()
    notify_agent_budget_reached(agent=agent)
    assert set(inbox()) == {builder.email}
