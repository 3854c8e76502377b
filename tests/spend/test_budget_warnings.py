"""Warnings before the wall: at configurable fractions of each monthly cap (default 80% and 95%)
the budget alert's audience hears the figure, the cap and the days left in the month — once per
threshold and month, opt-outs respected, the organization cap's to the admins."""

from __future__ import annotations

import datetime as dt
import time
from decimal import Decimal

import pytest
from celery.signals import before_task_publish
from django.core import mail

from apps.agents.spec import AgentSpec
from apps.agents.validation import parse_spec
from apps.notifications.models import BudgetWarningSent, Notification, NotificationOptOut
from apps.notifications.services import notify_budget_warning
from apps.notifications.tasks import send_budget_warning
from apps.orgs.services import organization_update
from apps.runs.services import run_create
from apps.spend.models import BudgetCounter
from apps.spend.services import (
    Cap,
    budget_counter_for,
    crossed_warnings,
    month_of,
)
from tests.runs.conftest import celery_worker, wait_for  # noqa: F401  (a fixture)
from tests.runs.factories import book_spend, published_agent, queued_run

D = Decimal


def _agent_counter(agent, month=None):
    return budget_counter_for(
        organization_id=agent.organization_id, agent_id=agent.pk, month=month or month_of()
    )


def _org_counter(org, month=None):
    return budget_counter_for(organization_id=org.pk, agent_id=None, month=month or month_of())


def test_a_booking_warns_only_for_the_thresholds_it_carries_the_cap_across():
    cap = Cap("agent", D("10"), 7, (D("0.8"), D("0.95")))
    # $7.90 → $8.00 reaches 80%; $8.00 → $8.10 does not cross it again.
    (warning,) = crossed_warnings([cap], {7: D("8.00")}, D("0.10"))
    assert warning.fractions == (D("0.8"),) and warning.spent_usd == D("8.00")
    assert crossed_warnings([cap], {7: D("8.10")}, D("0.10")) == []
    # One big request across both: both are named, so the lower is never sent after the higher.
    (warning,) = crossed_warnings([cap], {7: D("9.60")}, D("2.00"))
    assert warning.fractions == (D("0.8"), D("0.95"))
    # No cap, no fractions, or a free (unpriced) request: nothing.
    assert crossed_warnings([Cap("agent", None, 7, (D("0.8"),))], {7: D("9")}, D("5")) == []
    assert crossed_warnings([Cap("agent", D("10"), 7, ())], {7: D("9")}, D("5")) == []
    assert crossed_warnings([cap], {7: D("9")}, D("0")) == []


def test_the_spec_takes_warning_fractions_under_alerts_and_publish_names_a_bad_one():
    assert AgentSpec().alerts.budget.warn_at == [D("0.80"), D("0.95")]
    assert AgentSpec.model_validate(
        {"alerts": {"budget": {"audience": ["admins"], "warn_at": [0.9, "0.5"]}}}
    ).alerts.budget.warn_at == [D("0.5"), D("0.9")]
    for bad in ([1.2], [0], [0.5, 0.5], ["x"], [0.1, 0.2, 0.3, 0.4, 0.5, 0.6]):
        _, errors = parse_spec({"alerts": {"budget": {"audience": ["admins"], "warn_at": bad}}})
        assert [e.field for e in errors] == ["alerts.budget.warn_at"], bad


@pytest.mark.django_db
def test_an_agent_warning_goes_once_to_its_audience_with_figure_cap_and_days_left(
    org, owner, admin, builder, member
):
    agent = published_agent(org, name="Researcher", created_by=builder)
    counter = _agent_counter(agent)
    mail.outbox.clear()

    sent = notify_budget_warning(
        counter_id=counter.pk,
        fractions=["0.8"],
        spent_usd="8.00",
        limit_usd="10.00",
        today=counter.month + dt.timedelta(days=20),
    )
    # The default budget audience: the admins and the agent's owner.
    assert sent == 3 and {m.to[0] for m in mail.outbox} == {owner.email, admin.email, builder.email}
    message = mail.outbox[0]
    assert message.subject == "Researcher has used 80% of its monthly budget"
    assert "$8.00 of $10.00 (80%)" in message.body
    month_days = ((counter.month + dt.timedelta(days=32)).replace(day=1) - counter.month).days
    assert f"{month_days - 20} days left" in message.body
    assert f"/agents/{agent.pk}/?org={org.pk}" in message.body
    assert Notification.objects.filter(kind="budget", user=builder).count() == 1

    # Once per threshold and month: a second delivery (or a racing booking) sends nothing.
    mail.outbox.clear()
    assert (
        notify_budget_warning(
            counter_id=counter.pk, fractions=["0.8"], spent_usd="8.10", limit_usd="10.00"
        )
        == 0
    )
    assert mail.outbox == []
    # The next threshold is its own warning.
    assert (
        notify_budget_warning(
            counter_id=counter.pk, fractions=["0.95"], spent_usd="9.50", limit_usd="10.00"
        )
        == 3
    )


@pytest.mark.django_db
def test_warnings_reset_at_the_month(org, owner):
    agent = published_agent(org, name="Researcher")
    this_month = _agent_counter(agent)
    notify_budget_warning(
        counter_id=this_month.pk, fractions=["0.8"], spent_usd="8", limit_usd="10"
    )
    next_month = _agent_counter(
        agent, month=(this_month.month + dt.timedelta(days=32)).replace(day=1)
    )
    mail.outbox.clear()
    assert (
        notify_budget_warning(
            counter_id=next_month.pk, fractions=["0.8"], spent_usd="8", limit_usd="10"
        )
        == 1
    )
    assert BudgetWarningSent.objects.filter(threshold=D("0.8")).count() == 2


@pytest.mark.django_db
def test_a_threshold_crossed_with_a_higher_one_is_not_sent_after_it(org, owner):
    counter = _agent_counter(published_agent(org))
    mail.outbox.clear()
    assert (
        notify_budget_warning(
            counter_id=counter.pk, fractions=["0.8", "0.95"], spent_usd="9.6", limit_usd="10"
        )
        == 1
    )
    assert "95%" in mail.outbox[0].subject
    assert (
        notify_budget_warning(
            counter_id=counter.pk, fractions=["0.8"], spent_usd="9.7", limit_usd="10"
        )
        == 0
    )


@pytest.mark.django_db
def test_opt_outs_subtract_last(org, owner, admin):
    counter = _agent_counter(published_agent(org))
    NotificationOptOut.objects.create(user=admin, kind="budget", channel="email")
    NotificationOptOut.objects.create(user=owner, kind="budget", channel="in_app")
    mail.outbox.clear()
    notify_budget_warning(counter_id=counter.pk, fractions=["0.8"], spent_usd="8", limit_usd="10")
    assert [m.to[0] for m in mail.outbox] == [owner.email]
    assert list(Notification.objects.values_list("user_id", flat=True)) == [admin.pk]


@pytest.mark.django_db
def test_the_organization_caps_warning_goes_to_the_admins_whatever_a_spec_says(
    org, owner, admin, builder
):
    # An agent whose budget audience is only its owner cannot silence the organization's cap.
    published_agent(
        org, created_by=builder, alerts={"budget": {"audience": ["owner"], "warn_at": []}}
    )
    counter = _org_counter(org)
    mail.outbox.clear()
    notify_budget_warning(
        counter_id=counter.pk, fractions=["0.95"], spent_usd="95", limit_usd="100"
    )
    assert {m.to[0] for m in mail.outbox} == {owner.email, admin.email}
    assert mail.outbox[0].subject == f"{org.name} has used 95% of its monthly budget"
    assert f"/settings/organization/?org={org.pk}" in mail.outbox[0].body


@pytest.mark.django_db
def test_the_organizations_thresholds_are_its_settings(org, owner, member):
    assert org.budget_warn_at == ["0.8", "0.95"]
    organization_update(actor=owner, organization=org, budget_warn_at=[0.5, 0.9])
    org.refresh_from_db()
    assert org.budget_warn_at == ["0.5", "0.9"]
    from django.core.exceptions import PermissionDenied, ValidationError

    with pytest.raises(ValidationError):
        organization_update(actor=owner, organization=org, budget_warn_at=[1.5])
    with pytest.raises(PermissionDenied):
        organization_update(actor=member, organization=org, budget_warn_at=[0.7])


@pytest.mark.django_db
def test_the_org_settings_api_takes_budget_warn_at_with_a_422_naming_it(org, owner, client_for):
    client = client_for(owner, org)
    response = client.patch(f"/api/v1/orgs/{org.pk}/", {"budget_warn_at": ["0.6"]}, format="json")
    assert response.status_code == 200, response.json()
    assert response.json()["budget_warn_at"] == ["0.6"]
    response = client.patch(f"/api/v1/orgs/{org.pk}/", {"budget_warn_at": ["2"]}, format="json")
    assert response.status_code == 422 and "budget_warn_at" in response.json()


@pytest.mark.django_db(transaction=True)
def test_a_run_that_carries_its_cap_past_a_threshold_enqueues_the_warning(
    celery_worker,  # noqa: F811
    org,
    owner,
    member,
):
    agent = published_agent(
        org,
        name="Capped",
        budget={"monthly_usd": "1.00"},
        alerts={"budget": {"audience": ["admins"], "warn_at": ["0.5"]}},
    )
    # Spent before: just under half the cap (booked without warnings, as an old month's entries).
    # On a run nobody executes: enqueued, the live worker would run it and book its own spend
    # (and maybe cross the threshold) while this test books on the same ledger.
    earlier = run_create(
        actor=member, organization=org, agent=agent, input="earlier", enqueue=False
    )
    book_spend(earlier, D("0.4999"))
    mail.outbox.clear()
    # The live worker runs it (run_of would execute it here too, and the two race to claim it).
    run = wait_for(
        run_create(actor=member, organization=org, agent=agent, input="a short question").pk
    )
    assert run.status == "completed" and run.cost_usd > D("0.0001")

    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not Notification.objects.filter(kind="budget").exists():
        time.sleep(0.1)
    (notification,) = Notification.objects.filter(kind="budget")
    assert notification.user_id == owner.pk
    assert notification.title == "Capped has used 50% of its monthly budget"
    counter = BudgetCounter.objects.get(agent=agent, month=month_of())
    assert list(BudgetWarningSent.objects.values_list("counter_id", "threshold")) == [
        (counter.pk, D("0.5"))
    ]
    # A second run over the same threshold warns nobody again: its booking puts no warning on the
    # broker (a warning is only ever sent by that task, published when the booking commits, before
    # the run ends) — the event itself, where a pause would only hope the worker was done.
    published: list[str] = []

    def record(sender=None, **kwargs):
        published.append(sender)

    before_task_publish.connect(record, weak=False)
    try:
        second = run_create(actor=member, organization=org, agent=agent, input="hello again")
        assert wait_for(second.pk).status == "completed"
    finally:
        before_task_publish.disconnect(record)
    assert send_budget_warning.name not in published
    assert Notification.objects.filter(kind="budget").count() == 1


@pytest.mark.django_db
def test_the_organizations_row_carries_its_month_for_runs_view_only(
    org, owner, member, outsider, client_for
):
    book_spend(queued_run(owner, org, published_agent(org)), D("0.25"))
    row = client_for(owner, org).get(f"/api/v1/orgs/{org.pk}/").json()
    assert D(row["month_to_date_usd"]) >= D("0.25") and row["month_to_date_is_partial"] is False
    assert row["month"] == month_of().strftime("%Y-%m") and row["monthly_budget_usd"]
    # Spend is a runs:view read: a member sees the row without the figure, not a refusal.
    assert "month_to_date_usd" not in client_for(member, org).get(f"/api/v1/orgs/{org.pk}/").json()
    # Another organization's row is a 404.
    assert (
        client_for(outsider, org.__class__.objects.get(slug="globex"))
        .get(f"/api/v1/orgs/{org.pk}/")
        .status_code
        == 404
    )
