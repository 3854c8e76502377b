"""The aggregates over real delegated rows, written by the runner (seed 003's numeric stories)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from apps.runs.models import Run
from apps.vault.services import secret_create
from tests.runs.delegating import delegating, run_of, task_call
from tests.runs.factories import compatible_profile, published_agent
from tests.runs.fake_openai import FakeOpenAI


@pytest.fixture
def fan_out(org, owner, member, allow_local_model_requests):
    """An offline orchestrator that fans three delegations out to a researcher on another
    provider (the OpenAI-compatible server on 127.0.0.1, priced as gpt-4o-mini)."""
    with FakeOpenAI() as server:
        secret = secret_create(
            actor=owner, organization=org, name="k", purpose="openai_compatible", value="sk-test-1"
        )
        profile = compatible_profile(
            org, base_url=server.base_url, model_name="gpt-4o-mini", secret=secret
        )
        researcher = published_agent(org, name="Researcher", model_profile_id=profile.pk)
        orchestrator = delegating(org, researcher)
        one = task_call("look it up", "researcher")
        run = run_of(member, org, orchestrator, "\n".join([one, one, one]))
    assert run.status == "completed", run.error
    return run, researcher, list(Run.objects.filter(parent_run=run))


def _money(value) -> Decimal:
    return Decimal(str(value))


@pytest.mark.django_db(transaction=True)
def test_runs_lists_top_level_runs_and_delegations_only_when_asked(fan_out, client_for, owner, org):
    run, researcher, children = fan_out
    assert len(children) == 3
    client = client_for(owner, org)

    top = client.get("/api/v1/runs/").json()["results"]
    assert [row["id"] for row in top] == [run.pk]
    delegated = client.get(f"/api/v1/runs/?parent_run_id={run.pk}").json()["results"]
    assert sorted(row["id"] for row in delegated) == sorted(c.pk for c in children)
    own = client.get(f"/api/v1/runs/?agent_id={researcher.pk}&include_delegations=true").json()
    assert len(own["results"]) == 3


@pytest.mark.django_db(transaction=True)
def test_spend_reports_the_bill_once_not_140_per_100(fan_out, client_for, owner, org):
    run, researcher, children = fan_out
    body = client_for(owner, org).get("/api/v1/spend/").json()

    # What the organization owes: the parent's row, which already holds its delegations.
    assert _money(body["total"]["cost_usd"]) == run.cost_usd
    by_agent = {row["agent_id"]: row for row in body["by_agent"]}
    assert _money(by_agent[run.agent_id]["cost_usd"]) == run.cost_usd
    assert _money(by_agent[researcher.pk]["cost_usd"]) == 0  # it ran only as a delegate
    # What each agent's cap has spent this month (what its guard checks): the orchestrator's
    # holds its delegations; the researcher's own cap was not touched by running as a delegate.
    assert _money(by_agent[run.agent_id]["month_to_date_usd"]) == run.cost_usd
    assert _money(by_agent[researcher.pk]["month_to_date_usd"]) == 0


@pytest.mark.django_db(transaction=True)
def test_by_provider_is_each_rows_own_spend_and_sums_to_the_bill(fan_out, client_for, owner, org):
    run, researcher, children = fan_out
    body = client_for(owner, org).get("/api/v1/spend/").json()

    providers = {row["provider"]: _money(row["cost_usd"]) for row in body["by_provider"]}
    delegated = sum(c.cost_usd for c in children)
    assert providers["openai_compatible"] == delegated > 0
    assert providers["offline"] == run.cost_usd - delegated
    # Not the parent's $1.00 plus its delegates' $0.40: the attribution and the bill agree.
    assert sum(providers.values()) == run.cost_usd
