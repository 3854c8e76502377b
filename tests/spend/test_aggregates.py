"""The spend selectors: which question each figure answers (seed 003, "Qué muestra la pantalla
de coste"), computed in SQL over the caller's organization only."""

import datetime as dt
from decimal import Decimal

import pytest
from django.core.exceptions import ValidationError
from django.http import QueryDict
from django.utils import timezone

from apps.agents.models import AgentVersion, ModelProfile
from apps.spend.aggregates import (
    SpendScope,
    daily_series,
    month_to_date,
    spend_by_agent,
    spend_by_key,
    spend_by_provider,
    spend_by_user,
    spend_totals,
    usage_stats,
)
from apps.spend.filters import SpendWindow, last_days, parse_spend_window
from apps.spend.models import Ledger
from apps.spend.services import ingestion_charge_record
from apps.vault.models import Secret
from tests.runs.factories import book_spend, published_agent

from .builders import finished_run

pytestmark = pytest.mark.django_db

NOW = timezone.now()


def _window(days=7):
    return last_days(days)


def _row(rows, **match):
    (row,) = [row for row in rows if all(row[key] == value for key, value in match.items())]
    return row


# --- the window ---------------------------------------------------------------------------------


def test_days_is_the_last_n_utc_days_today_included():
    now = dt.datetime(2025, 3, 10, 15, 30, tzinfo=dt.UTC)
    window = parse_spend_window(QueryDict("days=7"), now=now)
    assert window.since == dt.datetime(2025, 3, 4, tzinfo=dt.UTC)
    assert window.until == now and window.period_days == 7
    assert len(window.days()) == 7


def test_from_wins_over_days_and_period_days_is_then_null():
    window = parse_spend_window(QueryDict("days=7&from=2025-02-01&to=2025-02-28"))
    assert window.since == dt.datetime(2025, 2, 1, tzinfo=dt.UTC)
    assert window.until.date() == dt.date(2025, 2, 28) and window.until.hour == 23
    assert window.period_days is None


@pytest.mark.parametrize(
    "query, field",
    [
        ("days=0", "days"),
        ("days=abc", "days"),
        ("days=400", "days"),
        ("from=yesterday", "from"),
        ("from=2025-03-10&to=2025-03-01", "to"),
        ("to=2025-03-01", "from"),
    ],
)
def test_a_value_outside_its_type_names_its_field(query, field):
    with pytest.raises(ValidationError) as refused:
        parse_spend_window(QueryDict(query))
    assert field in refused.value.message_dict


# --- by agent -----------------------------------------------------------------------------------


def test_window_cost_counts_top_level_runs_only_so_the_column_sums_to_the_total(org, member):
    orchestrator = published_agent(org, name="Orchestrator")
    researcher = published_agent(org, name="Researcher")
    parent = finished_run(orchestrator, cost="1.00", user=member)
    finished_run(researcher, cost="0.40", parent=parent)
    finished_run(orchestrator, cost="0.50", user=member)

    scope = SpendScope(organization=org)
    rows = spend_by_agent(scope, _window())
    assert _row(rows, agent_name="Orchestrator")["cost_usd"] == Decimal("1.50")
    assert _row(rows, agent_name="Orchestrator")["run_count"] == 2
    # The researcher only ran as a delegate: its money is already inside its parent's row.
    assert _row(rows, agent_name="Researcher")["cost_usd"] == Decimal("0")
    assert (
        sum(row["cost_usd"] for row in rows)
        == spend_totals(scope, _window())["model_usd"]
        == Decimal("1.50")
    )


def test_month_to_date_is_the_agents_own_month_delegations_included_and_ignores_the_window(
    org, member
):
    orchestrator = published_agent(org, name="Orchestrator")
    researcher = published_agent(org, name="Researcher", budget={"monthly_usd": "5.00"})
    parent = finished_run(orchestrator, user=member)
    child = finished_run(researcher, parent=parent)
    book_spend(child, Decimal("0.40"))
    # Earlier this month but outside a one-day window: still this month.
    early = finished_run(researcher, user=member, started_at=NOW.replace(day=1, hour=0, minute=0))
    book_spend(early, Decimal("0.10"))

    row = _row(spend_by_agent(SpendScope(organization=org), last_days(1)), agent_name="Researcher")
    assert Decimal("0.50") <= row["month_to_date_usd"] < Decimal("0.5001")
    assert row["monthly_cap_usd"] == Decimal("5.00")


def test_the_cap_is_the_published_versions_not_the_drafts(org):
    agent = published_agent(org, name="Capped", budget={"monthly_usd": "5.00"})
    agent.draft_spec = {**agent.draft_spec, "budget": {"monthly_usd": "50.00"}}
    agent.save(update_fields=["draft_spec"])
    row = _row(spend_by_agent(SpendScope(organization=org), _window()), agent_name="Capped")
    assert row["monthly_cap_usd"] == Decimal("5.00")
    AgentVersion.objects.create(agent=agent, number=2, spec={**agent.draft_spec})
    agent.current_version = agent.versions.get(number=2)
    agent.save(update_fields=["current_version"])
    row = _row(spend_by_agent(SpendScope(organization=org), _window()), agent_name="Capped")
    assert row["monthly_cap_usd"] == Decimal("50.00")


def test_partial_run_count_says_how_many_runs_are_a_floor(org, member):
    agent = published_agent(org, name="Helper")
    for partial in (True, True, False, False, False):
        finished_run(agent, cost="0.10", user=member, partial=partial)
    # A run whose ledger already knows it is a floor, before the runner copied it to the row.
    live = finished_run(agent, user=member, status="running")
    Ledger.objects.create(
        run=live, organization=org, agent=agent, cost_usd=Decimal("0.20"), cost_is_partial=True
    )

    row = _row(spend_by_agent(SpendScope(organization=org), _window()), agent_name="Helper")
    assert (row["run_count"], row["partial_run_count"]) == (6, 3)
    # The live run's ledger money is on the screen before it ends.
    assert row["cost_usd"] == Decimal("0.70")


def test_a_neighbours_spend_never_reaches_the_figures(org, other_org, member, outsider):
    finished_run(published_agent(org, name="Ours"), cost="1.00", user=member)
    finished_run(published_agent(other_org, name="Theirs"), cost="9.00", user=outsider)
    scope = SpendScope(organization=org)
    assert [row["agent_name"] for row in spend_by_agent(scope, _window())] == ["Ours"]
    assert spend_totals(scope, _window())["cost_usd"] == Decimal("1.00")
    assert {row["provider"] for row in spend_by_provider(scope, _window())} == {"offline"}
    assert [row["email"] for row in spend_by_user(scope, _window())] == [member.email]


# --- by provider, by key --------------------------------------------------------------------------


def test_by_provider_sums_each_runs_own_spend_so_it_is_both_the_attribution_and_the_bill(
    org, member
):
    orchestrator = published_agent(org, name="Orchestrator")
    researcher = published_agent(org, name="Researcher")
    parent = finished_run(orchestrator, cost="1.00", user=member, provider="openai")
    finished_run(researcher, cost="0.40", parent=parent, provider="anthropic")

    rows = spend_by_provider(SpendScope(organization=org), _window())
    assert _row(rows, provider="openai")["cost_usd"] == Decimal("0.60")
    assert _row(rows, provider="anthropic")["cost_usd"] == Decimal("0.40")
    assert sum(row["cost_usd"] for row in rows) == Decimal("1.00")


def test_nested_delegations_are_discounted_once_by_the_root_of_their_tree(org, member):
    # As the runner writes them: the root row is the whole ledger ($1.00); a delegated row is
    # its own agent's requests only — the middle's $0.50 does not hold its delegate's $0.20.
    a, b, c = (published_agent(org, name=name) for name in ("A", "B", "C"))
    root = finished_run(a, cost="1.00", user=member, provider="openai")
    middle = finished_run(b, cost="0.50", parent=root, provider="anthropic")
    finished_run(c, cost="0.20", parent=middle, provider="openrouter")
    rows = spend_by_provider(SpendScope(organization=org), _window())
    assert {row["provider"]: row["cost_usd"] for row in rows} == {
        "openai": Decimal("0.30"),
        "anthropic": Decimal("0.50"),
        "openrouter": Decimal("0.20"),
    }


def test_by_key_follows_the_published_versions_model_profile_to_its_secret(org, member):
    work_key = Secret.objects.create(
        organization=org, name="OpenAI work", purpose="openai", ciphertext=b"x", hint="1a2b"
    )
    profile = ModelProfile.objects.create(
        organization=org, label="GPT", provider="openai", model_name="gpt-4o", secret=work_key
    )
    keyed = published_agent(org, name="Keyed", model_profile_id=profile.pk)
    keyless = published_agent(org, name="Offline")
    parent = finished_run(keyed, cost="1.00", user=member, provider="openai")
    finished_run(keyless, cost="0.25", parent=parent, provider="offline")
    ModelProfile.objects.create(
        organization=org, label="Offline", provider="offline", model_name="offline", is_default=True
    )

    rows = spend_by_key(SpendScope(organization=org), _window())
    keyed_row = _row(rows, secret_id=work_key.pk)
    assert keyed_row["cost_usd"] == Decimal("0.75") and keyed_row["key"] == "OpenAI work (…1a2b)"
    assert _row(rows, secret_id=None)["cost_usd"] == Decimal("0.25")
    assert sum(row["cost_usd"] for row in rows) == Decimal("1.00")


# --- by user, per day, usage --------------------------------------------------------------------


def test_by_user_lists_top_level_runs_most_active_first(org, member, builder):
    agent = published_agent(org)
    finished_run(agent, cost="5.00", user=builder)
    for _ in range(3):
        parent = finished_run(agent, cost="0.10", user=member)
    finished_run(agent, cost="0.05", parent=parent)
    rows = spend_by_user(SpendScope(organization=org), _window())
    assert [row["email"] for row in rows] == [member.email, builder.email]
    assert rows[0]["run_count"] == 3 and rows[0]["cost_usd"] == Decimal("0.30")


def test_the_daily_series_has_every_day_and_adds_up_to_the_total_with_ingestion(org, member):
    agent = published_agent(org)
    finished_run(
        agent,
        cost="0.30",
        user=member,
        started_at=NOW - dt.timedelta(days=2),
        input_tokens=100,
        output_tokens=10,
    )
    finished_run(agent, cost="0.20", user=member, partial=True, output_tokens=5)
    ingestion_charge_record(
        organization=org, provider="offline", model_name="offline", input_tokens=1_000_000
    )

    scope, window = SpendScope(organization=org), _window(7)
    series = daily_series(scope, window)
    assert len(series) == 7 and series[-1]["date"] == NOW.astimezone(dt.UTC).date()
    assert series[-3]["cost_usd"] == Decimal("0.30") and series[-3]["tokens"] == 110
    today = series[-1]
    assert today["model_usd"] == Decimal("0.20") and today["ingestion_usd"] == Decimal("3.00")
    assert today["partial_run_count"] == 1
    totals = spend_totals(scope, window)
    assert totals["cost_usd"] == Decimal("3.50") == sum(point["cost_usd"] for point in series)
    assert (totals["model_usd"], totals["ingestion_usd"]) == (Decimal("0.50"), Decimal("3.00"))


def test_own_scope_reads_only_ones_runs_and_no_ingestion(org, member, builder):
    agent = published_agent(org)
    finished_run(agent, cost="0.30", user=member, output_tokens=7)
    finished_run(agent, cost="2.00", user=builder)
    ingestion_charge_record(
        organization=org, provider="offline", model_name="offline", input_tokens=1_000_000
    )
    stats = usage_stats(SpendScope(organization=org, own_user_id=member.pk), _window())
    assert stats["total_runs"] == 1
    assert stats["cost"]["cost_usd"] == Decimal("0.30") and stats["cost"][
        "ingestion_usd"
    ] == Decimal("0")
    assert stats["tokens"]["output"] == 7


def test_the_organizations_month_is_every_ledger_entry_the_guard_measures(org, member):
    agent = published_agent(org)
    parent = finished_run(agent, user=member)
    book_spend(parent, Decimal("1.00"))
    ingestion_charge_record(
        organization=org, provider="offline", model_name="offline", input_tokens=1_000_000
    )
    month = month_to_date(SpendScope(organization=org))
    assert Decimal("4.00") <= month["month_to_date_usd"] < Decimal("4.0001")
    assert month["monthly_cap_usd"] == org.monthly_budget_usd
    assert month["month_to_date_is_partial"] is False


def test_a_window_in_the_past_does_not_move_the_month_to_date(org, member):
    agent = published_agent(org, name="Helper")
    run = finished_run(agent, user=member)
    book_spend(run, Decimal("0.10"))
    past = SpendWindow(
        since=dt.datetime(2020, 1, 1, tzinfo=dt.UTC), until=dt.datetime(2020, 1, 31, tzinfo=dt.UTC)
    )
    row = _row(spend_by_agent(SpendScope(organization=org), past), agent_name="Helper")
    assert row["cost_usd"] == Decimal("0") and row["month_to_date_usd"] >= Decimal("0.10")


def test_a_tree_crossing_the_window_start_is_counted_by_its_unpriced_delegate(org, member):
    """#620: the parent's row is before the window, so it is outside every aggregate of the page;
    the delegate's own spend is inside By provider and By key, so its floor lands on the agent
    that ran it — once per tree, however many of its delegations cross the edge."""
    parent_agent = published_agent(org, name="Orchestrator")
    delegate = published_agent(org, name="Researcher")
    nested = published_agent(org, name="Summariser")
    window = _window(7)
    before = window.since - dt.timedelta(hours=3)
    inside = window.since + dt.timedelta(hours=1)

    # One tree, two unpriced delegations inside the window (one nested under the other): 1.
    root = finished_run(parent_agent, cost="0.50", user=member, started_at=before, partial=True)
    child = finished_run(delegate, cost="0.10", parent=root, started_at=inside, partial=True)
    finished_run(
        delegate,
        cost="0.05",
        parent=root,
        started_at=inside + dt.timedelta(minutes=5),
        partial=True,
    )
    finished_run(
        nested, cost="0.01", parent=child, started_at=inside + dt.timedelta(minutes=1), partial=True
    )
    # A priced delegation under an unpriced parent outside the window: the window's money is
    # exact, so no floor.
    other_root = finished_run(
        parent_agent, cost="0.30", user=member, started_at=before, partial=True
    )
    finished_run(nested, cost="0.02", parent=other_root, started_at=inside, partial=False)
    # A tree wholly inside the window is counted by its top-level row, as before.
    inner_root = finished_run(
        parent_agent, cost="0.20", user=member, started_at=inside, partial=True
    )
    finished_run(delegate, cost="0.03", parent=inner_root, started_at=inside, partial=True)

    scope = SpendScope(organization=org)
    rows = spend_by_agent(scope, window)
    assert _row(rows, agent_name="Researcher")["partial_run_count"] == 1
    assert _row(rows, agent_name="Summariser")["partial_run_count"] == 0
    assert _row(rows, agent_name="Orchestrator")["partial_run_count"] == 1
    # One figure governs the page: the total is By agent's sum.
    assert spend_totals(scope, window)["partial_run_count"] == 2
    assert sum(row["partial_run_count"] for row in rows) == 2

    # A window that also holds the parents counts each tree once, by its top-level row.
    wide = _window(30)
    assert _row(spend_by_agent(scope, wide), agent_name="Researcher")["partial_run_count"] == 0
    assert spend_totals(scope, wide)["partial_run_count"] == 3
