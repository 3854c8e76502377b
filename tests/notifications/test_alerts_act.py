"""Alerts people can act on: every link an alert carries opens a page its reader may see; the
cap's "reached" alert goes once per cap and month, not once per refused run; and a warning
threshold crossed by one request arrives before the refusal it precedes or together with it,
never after."""

from __future__ import annotations

import datetime as dt
import re
from decimal import Decimal

import pytest
from django.core import mail
from django.utils import timezone

from apps.approvals.models import ToolApproval
from apps.notifications.models import BudgetWarningSent, Notification
from apps.notifications.services import (
    notify_agent_budget_reached,
    notify_approval_expiring,
    notify_budget_warning,
    notify_org_cap_reached,
    notify_run_parked,
    send_due_usage_reports,
)
from apps.spend.services import budget_counter_for, month_of
from tests.approvals.factories import ADD_ONE, gated_agent, run_now
from tests.runs.delegating import run_of
from tests.runs.factories import book_spend, published_agent, queued_run

PUBLIC = "https://agents.example"
URL = re.compile(re.escape(PUBLIC) + r"(/\S*)")


@pytest.fixture(autouse=True)
def public_url(settings):
    settings.AGENTICOS_PUBLIC_URL = PUBLIC + "/"


def _agent_counter(agent):
    return budget_counter_for(
        organization_id=agent.organization_id, agent_id=agent.pk, month=month_of()
    )


def _org_counter(org):
    return budget_counter_for(organization_id=org.pk, agent_id=None, month=month_of())


def _every_alert(org, member, builder) -> None:
    """Send one of each alert the product has, to their real audiences."""
    agent = published_agent(
        org, name="Reporter", created_by=builder, alerts={"usage": {"weekly": True}}
    )
    run_now(member, org, agent, "hello")
    parked = run_now(member, org, gated_agent(org, created_by=builder), ADD_ONE)
    assert parked.status == "awaiting_approval"
    notify_run_parked(run_id=parked.pk)
    notify_approval_expiring(
        run_id=parked.pk,
        approval_ids=ToolApproval.objects.filter(run=parked).values_list("pk", flat=True),
        expires_at=timezone.now() + dt.timedelta(hours=3),
    )
    notify_budget_warning(
        counter_id=_agent_counter(agent).pk, fractions=["0.8"], spent_usd="8", limit_usd="10"
    )
    notify_budget_warning(
        counter_id=_org_counter(org).pk, fractions=["0.8"], spent_usd="80", limit_usd="100"
    )
    notify_agent_budget_reached(agent=agent, limit_usd="10.00")
    notify_org_cap_reached(organization=org, limit_usd="100.00")
    monday = (timezone.now() + dt.timedelta(days=7 - timezone.now().weekday())).date()
    assert send_due_usage_reports(monday) >= 1


@pytest.mark.django_db
def test_every_alerts_link_opens_a_page_for_the_person_it_was_sent_to(
    client, org, owner, admin, operator, builder, member
):
    _every_alert(org, member, builder)
    linked = Notification.objects.exclude(link="").select_related("user")
    kinds = set(linked.values_list("kind", flat=True))
    assert kinds == {"approvals", "budget", "usage"}
    opened = set()
    for notification in linked:
        client.force_login(notification.user)
        path = notification.link.removeprefix(PUBLIC)
        response = client.get(path, follow=True)
        assert response.status_code == 200, (notification.title, path, notification.user.email)
        opened.add(path.split("?")[0])
    assert {"/runs", "/settings/organization/"} <= opened
    # The e-mails carry the same links, each opened as the person it went to.
    for message in mail.outbox:
        (recipient,) = message.to
        client.force_login(type(owner).objects.get(email=recipient))
        for path in URL.findall(message.body):
            assert client.get(path, follow=True).status_code == 200, (message.subject, path)


@pytest.mark.django_db(transaction=True)
def test_a_cap_that_refuses_run_after_run_sends_one_reached_alert_a_month(
    org, owner, admin, member
):
    agent = published_agent(org, name="Capped", budget={"monthly_usd": "1.00"})
    book_spend(queued_run(member, org, agent), Decimal("1.00"))
    mail.outbox.clear()
    refused = [run_of(member, org, agent, f"question {n}") for n in range(3)]
    assert {run.status for run in refused} == {"budget_exceeded"}
    reached = [m for m in mail.outbox if m.subject == "Capped reached its monthly budget"]
    assert sorted(m.to[0] for m in reached) == sorted([owner.email, admin.email])
    assert Notification.objects.filter(user=owner, kind="budget").count() == 1
    counter = _agent_counter(agent)
    assert BudgetWarningSent.objects.filter(counter=counter, threshold=1).count() == 1


@pytest.mark.django_db
def test_one_request_carrying_the_cap_past_its_warning_to_its_end_sends_reached_not_95(
    org, owner, admin
):
    counter = _org_counter(org)
    mail.outbox.clear()
    # One booking took the organization from 90% to 110%: the warning task names 95%.
    notify_budget_warning(
        counter_id=counter.pk, fractions=["0.95"], spent_usd="110", limit_usd="100"
    )
    subjects = {m.subject for m in mail.outbox}
    assert subjects == {f"{org.name} reached its monthly budget"}
    assert "past 95%" in mail.outbox[0].body
    # The refusal that follows finds the cap already announced: nothing after it.
    mail.outbox.clear()
    notify_org_cap_reached(organization=org, limit_usd="100.00")
    assert mail.outbox == []


@pytest.mark.django_db
def test_a_warning_delivered_after_the_refusals_alert_stays_silent(org, owner, admin):
    counter = _org_counter(org)
    mail.outbox.clear()
    # The refused run's alert went out first (the warning's task was still on the broker).
    notify_org_cap_reached(organization=org, limit_usd="100.00")
    assert {m.subject for m in mail.outbox} == {f"{org.name} reached its monthly budget"}
    mail.outbox.clear()
    assert (
        notify_budget_warning(
            counter_id=counter.pk, fractions=["0.95"], spent_usd="96", limit_usd="100"
        )
        == 0
    )
    assert mail.outbox == []


@pytest.mark.django_db
def test_a_warning_that_comes_first_is_followed_by_the_reached_alert(org, owner, admin):
    counter = _org_counter(org)
    mail.outbox.clear()
    notify_budget_warning(
        counter_id=counter.pk, fractions=["0.95"], spent_usd="96", limit_usd="100"
    )
    notify_org_cap_reached(organization=org, limit_usd="100.00")
    to_owner = [m.subject for m in mail.outbox if m.to == [owner.email]]
    assert to_owner == [
        f"{org.name} has used 95% of its monthly budget",
        f"{org.name} reached its monthly budget",
    ]
