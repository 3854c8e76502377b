"""An agent's month to date is the figure its cap is checked against, on every surface: the
budget guard counts what its delegates spent under its runs, so the card does too."""

from __future__ import annotations

from decimal import Decimal

import pytest

from apps.agents.models import AgentVersion
from apps.spend.models import BudgetCounter, LedgerEntry
from apps.spend.services import month_of
from tests.runs.delegating import delegating, run_of, task_call
from tests.runs.factories import book_spend, published_agent


def _month_on_spend(client, agent) -> Decimal:
    rows = client.get("/api/v1/spend/").json()["by_agent"]
    (row,) = [row for row in rows if row["agent_id"] == agent.pk]
    return Decimal(row["month_to_date_usd"])


def _cap(agent, monthly_usd: str) -> None:
    """Publish a version 2 with a new cap (what the builder's publish would do)."""
    spec = {**agent.current_version.spec, "budget": {"monthly_usd": monthly_usd}}
    version = AgentVersion.objects.create(agent=agent, number=2, spec=spec)
    agent.current_version = version
    agent.save(update_fields=["current_version"])


@pytest.mark.django_db(transaction=True)
def test_a_delegating_agents_card_is_the_figure_its_guard_refuses_with(
    org, owner, member, client_for, client
):
    researcher = published_agent(org, name="Researcher")
    orchestrator = delegating(org, researcher, budget={"monthly_usd": "5.00"})
    run = run_of(member, org, orchestrator, "\n".join([task_call("look it up", "researcher")] * 2))
    assert run.status == "completed", run.error
    api = client_for(owner, org)

    entries = LedgerEntry.objects.filter(month=month_of())
    under_its_runs = sum(e.cost_usd for e in entries.filter(ledger__agent=orchestrator))
    billed_to_it = sum(e.cost_usd for e in entries.filter(agent=orchestrator))
    delegated = sum(e.cost_usd for e in entries.filter(agent=researcher))
    assert delegated > 0 and under_its_runs == billed_to_it + delegated
    counter = BudgetCounter.objects.get(agent=orchestrator, month=month_of())
    assert _month_on_spend(api, orchestrator) == counter.committed_usd == under_its_runs
    # The delegate's own cap was not spent: its work was paid from its parent's budget.
    assert _month_on_spend(api, researcher) == 0

    # The cap binds: the refusal names what was spent, and the card says the same figure.
    book_spend(run, Decimal("0.02"))
    _cap(orchestrator, "0.01")
    refused = run_of(member, org, orchestrator, "hello again")
    assert refused.status == "budget_exceeded"
    spent = Decimal(refused.budget_refusal["spent_usd"])
    assert _month_on_spend(api, orchestrator) == spent

    # The console's Spend page and the dashboard's cap card read the same figure.
    client.force_login(owner)
    page = client.get(f"/spend/?org={org.pk}")
    (row,) = [r for r in page.context["overview"]["by_agent"] if r["agent_id"] == orchestrator.pk]
    assert row["month_to_date_usd"] == spent
