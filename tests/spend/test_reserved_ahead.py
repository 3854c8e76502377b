"""Reserving ahead (docs/budgets.md): the statement that books a request also reserves the run's
next one, under the same check and locks as a reservation made just before it; whatever a run
holds is booked or given back by the time it ends."""

from datetime import timedelta
from decimal import Decimal

import pytest
from asgiref.sync import async_to_sync
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
from pydantic_ai.usage import RequestUsage

from apps.runs.models import Run
from apps.runs.runner import execute_run
from apps.spend import services
from apps.spend.guard import RunMeter
from apps.spend.models import BudgetCounter, BudgetScope, Ledger, LedgerEntry
from apps.spend.services import BudgetExceeded, month_of
from tests.runs.factories import book_spend, published_agent, queued_run

pytestmark = pytest.mark.django_db


def counters(org):
    return list(BudgetCounter.objects.filter(organization=org, month=month_of()).order_by("pk"))


def tool_call_response(input_tokens=100, output_tokens=10) -> ModelResponse:
    return ModelResponse(
        parts=[ToolCallPart("think", {})],
        usage=RequestUsage(input_tokens=input_tokens, output_tokens=output_tokens),
        model_name="offline",
    )


def meter_for(org, member, *, org_limit=None, agent_limit=None) -> RunMeter:
    agent = published_agent(org)
    run = queued_run(member, org, agent)
    return RunMeter.open(
        run=Run.objects.get(pk=run.pk),
        provider="offline",
        model_name="offline",
        agent_limit_usd=agent_limit,
        org_limit_usd=org_limit,
    )


def test_every_request_of_a_multi_step_run_is_booked_and_nothing_stays_reserved(org, member):
    agent = published_agent(org, limits={"max_steps": 10})
    run = queued_run(member, org, agent, "/steps 5")

    execute_run(run.pk)

    run = Run.objects.get(pk=run.pk)
    assert run.status == "completed" and run.request_count == 6
    entries = LedgerEntry.objects.filter(ledger__run=run)
    assert entries.count() == 6 and all(entry.cost_usd > 0 for entry in entries)
    assert (
        Ledger.objects.get(run=run).cost_usd
        == sum(entry.cost_usd for entry in entries)
        == run.cost_usd
    )
    for counter in counters(org):
        assert counter.reserved_usd == 0
        assert counter.committed_usd == run.cost_usd


def test_a_reservation_made_ahead_that_no_request_uses_is_given_back(org, member):
    # The step limit ends the run after a response that asked for a tool: the reservation made
    # ahead for the request that never comes is released when the run ends.
    agent = published_agent(org, limits={"max_steps": 3})
    run = queued_run(member, org, agent, "/steps 10")

    execute_run(run.pk)

    run = Run.objects.get(pk=run.pk)
    assert run.stop_reason == "step_limit" and run.request_count == 3
    for counter in counters(org):
        assert counter.reserved_usd == 0
        assert counter.committed_usd == run.cost_usd


def test_the_settle_books_the_charge_and_reserves_ahead_when_the_caps_allow(org, member):
    meter = meter_for(org, member, org_limit=Decimal("10"))
    async_to_sync(meter.reserve)(Decimal("0.01"))
    assert [c.reserved_usd for c in counters(org)] == [Decimal("0.01")] * 2

    record = async_to_sync(meter.settle)(tool_call_response(), Decimal("0.02"))

    assert LedgerEntry.objects.filter(ledger_id=meter.ledger_id).count() == 1
    assert not meter.refused_ahead and meter.held_usd == Decimal("0.02")
    assert [c.reserved_usd for c in counters(org)] == [Decimal("0.02")] * 2
    assert [c.committed_usd for c in counters(org)] == [record.cost_usd] * 2
    # The next request fits in it: sent without another round trip.
    assert meter.covered(Decimal("0.015"))
    # A larger one tops up before it is sent: the reservation is replaced, not added to.
    assert not meter.covered(Decimal("0.03"))
    async_to_sync(meter.reserve)(Decimal("0.03"))
    assert [c.reserved_usd for c in counters(org)] == [Decimal("0.03")] * 2
    async_to_sync(meter.release)()
    assert [c.reserved_usd for c in counters(org)] == [0, 0]


def test_a_cap_refuses_the_reservation_ahead_but_the_charge_is_booked_and_asked_again_later(
    org, member
):
    meter = meter_for(org, member, org_limit=Decimal("1"))
    earlier = queued_run(member, org, published_agent(org, name="Earlier"))
    book_spend(earlier, Decimal("0.999"))
    async_to_sync(meter.reserve)(Decimal("0.0005"))  # 0.999 spent: admitted

    async_to_sync(meter.settle)(tool_call_response(output_tokens=100), Decimal("0.01"))

    # Booked: the organization is now at or past its cap, so nothing was reserved ahead.
    assert LedgerEntry.objects.filter(ledger_id=meter.ledger_id).count() == 1
    assert meter.refused_ahead and meter.held_usd == 0
    organization_counter = BudgetCounter.objects.get(
        organization=org, scope=BudgetScope.ORGANIZATION
    )
    assert organization_counter.reserved_usd == 0
    # The next request is not covered: it asks again before it is sent, and is refused by name.
    assert not meter.covered(Decimal("0.0001"))
    with pytest.raises(BudgetExceeded) as refusal:
        async_to_sync(meter.reserve)(Decimal("0.0001"))
    assert refusal.value.scope == BudgetScope.ORGANIZATION
    # Room appears (another run's request is released, here: the earlier spend is refunded):
    # asked again, it goes.
    BudgetCounter.objects.filter(scope=BudgetScope.ORGANIZATION, organization=org).update(
        committed_usd=0
    )
    async_to_sync(meter.reserve)(Decimal("0.0001"))
    assert not meter.refused_ahead and meter.held_usd == Decimal("0.0001")


def test_an_answer_reserves_nothing_ahead(org, member):
    meter = meter_for(org, member)
    async_to_sync(meter.reserve)(Decimal("0.01"))
    answer = ModelResponse(
        parts=[TextPart("done")],
        usage=RequestUsage(input_tokens=5, output_tokens=2),
        model_name="offline",
    )

    assert meter.next_estimate(answer) == 0
    async_to_sync(meter.settle)(answer, meter.next_estimate(answer))

    assert meter.held_usd == 0
    assert [c.reserved_usd for c in counters(org)] == [0, 0]


def test_a_run_crossing_into_a_new_month_moves_what_it_holds_to_the_new_months_counters(
    org, member, monkeypatch
):
    meter = meter_for(org, member, org_limit=Decimal("10"))
    async_to_sync(meter.reserve)(Decimal("0.01"))
    async_to_sync(meter.settle)(
        tool_call_response(), Decimal("0.02")
    )  # 0.02 held ahead, this month
    this_month = month_of()
    next_month = (this_month + timedelta(days=32)).replace(day=1)
    monkeypatch.setattr(services, "month_of", lambda moment=None: next_month)

    assert not meter.covered(Decimal("0.001"))  # a reservation ahead in last month's counters
    async_to_sync(meter.reserve)(Decimal("0.01"))

    old = BudgetCounter.objects.filter(organization=org, month=this_month)
    new = BudgetCounter.objects.filter(organization=org, month=next_month).order_by("pk")
    assert [c.reserved_usd for c in old] == [0, 0]
    assert [(c.scope, c.reserved_usd) for c in new] == [
        (BudgetScope.AGENT, Decimal("0.01")),
        (BudgetScope.ORGANIZATION, Decimal("0.01")),
    ]
    async_to_sync(meter.release)()
    assert [c.reserved_usd for c in new.all()] == [0, 0]
