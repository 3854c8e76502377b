"""The budget guard: two caps, each measured against its own spend, checked before every request."""

from decimal import Decimal

import pytest
from pydantic_ai.messages import ModelMessagesTypeAdapter, ModelRequest, UserPromptPart

from apps.runs.models import Run
from apps.runs.runner import execute_run
from apps.spend.models import BudgetCounter, Ledger, LedgerEntry
from apps.spend.pricing import price_usage
from apps.spend.services import ingestion_charge_record
from tests.runs.factories import book_spend, published_agent, queued_run


def run_now(actor, org, agent, text="hello") -> Run:
    run = queued_run(actor, org, agent, text)
    execute_run(run.pk)
    return Run.objects.get(pk=run.pk)


def spent_before(actor, org, agent, usd: str) -> Run:
    """A finished earlier run of ``agent`` that spent ``usd``."""
    run = queued_run(actor, org, agent, "earlier work")
    book_spend(run, Decimal(usd))
    Run.objects.filter(pk=run.pk).update(status="completed", cost_usd=Decimal(usd))
    return run


def set_org_cap(org, usd):
    org.monthly_budget_usd = None if usd is None else Decimal(usd)
    org.save(update_fields=["monthly_budget_usd"])


@pytest.mark.django_db
def test_the_agent_cap_binds_on_its_own_and_the_refusal_names_it(org, member):
    set_org_cap(org, "50")
    agent = published_agent(org, budget={"monthly_usd": "5"})
    spent_before(member, org, agent, "5")

    run = run_now(member, org, agent)

    assert run.status == "budget_exceeded"
    assert run.stop_reason == "budget"
    assert run.budget_refusal["scope"] == "agent"
    assert run.budget_refusal["limit_usd"] == "5.00"
    assert Decimal("5") <= Decimal(run.budget_refusal["spent_usd"]) < Decimal("5.0001")
    assert (
        run.error
        == "This agent's monthly budget of $5.00 is used up: $5.0001 spent this month (UTC)."
    )
    # Refused before the request, not after: nothing was sent, nothing was spent.
    assert run.request_count == 0 and run.cost_usd == 0


@pytest.mark.django_db
def test_the_organization_cap_binds_on_its_own_and_the_refusal_names_it(org, member):
    set_org_cap(org, "10")
    neighbour = published_agent(org, name="Neighbour")
    spent_before(member, org, neighbour, "10")
    agent = published_agent(org, budget={"monthly_usd": "100"})

    run = run_now(member, org, agent)

    assert run.status == "budget_exceeded"
    assert run.budget_refusal["scope"] == "organization"
    assert run.budget_refusal["limit_usd"] == "10.00"
    assert Decimal("10") <= Decimal(run.budget_refusal["spent_usd"]) < Decimal("10.0001")
    assert run.error.startswith("The organization's monthly budget of $10.00 is used up")


@pytest.mark.django_db
def test_an_agent_cap_is_not_used_up_by_its_neighbours_spend(org, member):
    # Folded with min(), a $5 agent under a $50 organization would stop once its neighbours spent $5.
    set_org_cap(org, "50")
    spent_before(member, org, published_agent(org, name="Neighbour"), "9")
    agent = published_agent(org, budget={"monthly_usd": "5"})

    assert run_now(member, org, agent).status == "completed"


@pytest.mark.django_db
def test_an_agent_cannot_loosen_the_organization_cap(org, member):
    set_org_cap(org, "10")
    agent = published_agent(org, budget={"monthly_usd": "100"})
    spent_before(member, org, agent, "10")

    run = run_now(member, org, agent)

    assert run.status == "budget_exceeded"
    assert run.budget_refusal["scope"] == "organization"


@pytest.mark.django_db
def test_ingestion_spend_counts_against_the_organization_cap(org, member):
    set_org_cap(org, "1")
    # An ingestion job spending about $1.5 on an offline-priced embedding model.
    ingestion_charge_record(
        organization=org, provider="offline", model_name="offline", input_tokens=500_000
    )

    run = run_now(member, org, published_agent(org))

    assert run.status == "budget_exceeded" and run.budget_refusal["scope"] == "organization"


@pytest.mark.django_db
def test_an_uncapped_organization_and_agent_never_refuse(org, member):
    set_org_cap(org, None)
    agent = published_agent(org)
    spent_before(member, org, agent, "1000")
    assert run_now(member, org, agent).status == "completed"


@pytest.mark.django_db
def test_a_cap_reached_mid_run_stops_it_at_the_next_request(org, member, echo_toolset):
    set_org_cap(org, "50")
    agent = published_agent(org, budget={"monthly_usd": "1"}, capabilities=[{"id": echo_toolset}])
    # One offline request of this agent costs well under a cent; leave less than that.
    earlier = spent_before(member, org, agent, "0.9995")
    assert earlier.cost_usd < Decimal("1")

    run = run_now(member, org, agent, "/steps 5")

    assert run.status == "budget_exceeded"
    assert run.request_count >= 1  # the requests made under the cap were sent and booked
    assert run.cost_usd == Ledger.objects.get(run=run).cost_usd > 0


@pytest.mark.django_db
def test_a_resumed_run_is_not_counted_twice(org, member):
    """Seed 003: a $10 agent that had spent $6 and parked came back with 6 + 6 = 12 on its first
    request and was refused at 60% of its cap. The run's own spend is in the baseline once."""
    set_org_cap(org, "50")
    agent = published_agent(org, budget={"monthly_usd": "10"})
    run = queued_run(member, org, agent, "start")
    book_spend(run, Decimal("6"))
    history = [ModelRequest(parts=[UserPromptPart("start")])]
    Run.objects.filter(pk=run.pk).update(
        status="awaiting_approval",
        cost_usd=Decimal("6"),
        request_count=1,
        started_at=run.created_at,
        transcript=ModelMessagesTypeAdapter.dump_python(history, mode="json"),
    )

    execute_run(run.pk, resume=True)

    run.refresh_from_db()
    assert run.status == "completed", run.error
    # Finishing the continuation keeps what the first segment spent.
    assert Decimal("6") < run.cost_usd < Decimal("6.01")
    assert run.cost_usd == Ledger.objects.get(run=run).cost_usd
    assert Ledger.objects.filter(run=run).count() == 1


@pytest.mark.django_db
def test_the_counters_hold_exactly_the_ledger_and_nothing_stays_reserved(org, member, echo_toolset):
    agent = published_agent(org, capabilities=[{"id": echo_toolset}])
    for text in ("one", '/call echo {"text": "x"}', "/steps 2"):
        run_now(member, org, agent, text)

    total = sum(LedgerEntry.objects.filter(organization=org).values_list("cost_usd", flat=True))
    org_counter = BudgetCounter.objects.get(organization=org, scope="organization")
    agent_counter = BudgetCounter.objects.get(agent=agent, scope="agent")
    assert org_counter.committed_usd == agent_counter.committed_usd == total
    assert org_counter.reserved_usd == agent_counter.reserved_usd == 0
    assert total == sum(Run.objects.filter(agent=agent).values_list("cost_usd", flat=True))


def test_the_offline_rate_card_is_three_and_fifteen_dollars_per_million():
    price = price_usage("offline", "offline", 1_000_000, 1_000_000)
    assert price.cost_usd == Decimal("18") and price.priced


def test_genai_prices_prices_known_models_and_books_unknown_ones_at_zero():
    known = price_usage("openai", "gpt-4o-mini", 1_000_000, 0)
    assert known.priced and known.cost_usd > 0
    unknown = price_usage("openai_compatible", "house-model-7b", 1000, 1000)
    assert unknown == type(unknown)(Decimal("0"), False)
