"""The dashboard's cards on GET /stats/usage: every block over the same resolved window.

Which rows each block counts (seed 003, "Qué muestran los agregados del dashboard"):

- top-level runs only — ``outcomes``, ``surfaces``, ``latency``, ``active_people``, ``by_user``
  and ``quality``: a delegated row copies its parent's user and surface, so counting it would
  invent a second person and a second arrival through a channel someone used once;
- each row's *own* spend over every row — ``by_provider`` (aggregates.spend_by_provider);
- delegated rows included — ``by_agent`` (adoption: an agent that only runs as a delegate still
  has a bar, so the bars may add up to more than ``total_runs``; nothing sums them) and
  ``by_version`` (``group_by=version``: a specialist that only runs delegated has versions to
  compare too).

Invariants the tests check: the outcome segments sum to ``total_runs``, and the
``awaiting_approval`` segment equals the approvals card (``approvals_waiting``, the one count with
no delegation filter: a parked child is a stuck parent; today a delegation is written finished,
so it never parks).
"""

from __future__ import annotations

from django.apps import apps
from django.db.models import Sum

from . import rollup
from .aggregates import (
    ZERO,
    SpendScope,
    run_groups,
    spend_by_provider,
    spend_by_user,
    window_slices,
)
from .filters import SpendWindow
from .models import SpendDayLatency

PERCENTILES = {"p50": 0.5, "p95": 0.95, "p99": 0.99}


def outcomes(scope: SpendScope, slices: rollup.Slices) -> dict[str, int]:
    """The donut: top-level window runs per status; the segments sum to total_runs."""
    rows = run_groups(scope, slices, ("status",), top_level=True, measures=("run_count",))
    return {status: rows[(status,)]["run_count"] for (status,) in sorted(rows)}


def surfaces(scope: SpendScope, slices: rollup.Slices) -> list[dict]:
    rows = run_groups(scope, slices, ("surface",), top_level=True, measures=("run_count",))
    return sorted(
        ({"surface": surface, "run_count": row["run_count"]} for (surface,), row in rows.items()),
        key=lambda row: (-row["run_count"], row["surface"]),
    )


def latency(scope: SpendScope, slices: rollup.Slices) -> dict:
    """p50/p95/p99 of top-level runs that finished (an unfinished run has no duration: left out,
    not counted as zero), in milliseconds; None when none finished. Durations are counted to the
    millisecond per day (rollup.LATENCY_SQL) and the percentiles interpolated as PostgreSQL's
    percentile_cont does, so a figure is within a millisecond of the one over raw durations."""
    cached = SpendDayLatency.objects.filter(
        slices.cached(), organization_id=slices.organization_id
    ).order_by()
    live = slices.live_rows("latency", rollup.LATENCY_SQL)
    if scope.is_own:
        cached = cached.filter(user_id=scope.own_user_id)
        live = [row for row in live if row["user_id"] == scope.own_user_id]
    rows: list[dict] = (
        [dict(row) for row in cached.values("duration_ms").annotate(run_count=Sum("run_count"))]
        if slices.has_cached
        else []
    )
    counts: dict[int, int] = {
        key[0]: int(row["run_count"])
        for key, row in rollup.merge([*rows, *live], ("duration_ms",), ("run_count",)).items()
    }
    figures: dict[str, int | None] = {}
    for name, fraction in PERCENTILES.items():
        figure = rollup.percentile_cont(counts, fraction)
        figures[name] = None if figure is None else round(figure)
    return {"finished_runs": sum(counts.values()), **figures}


def active_people(scope: SpendScope, slices: rollup.Slices) -> int:
    rows = run_groups(scope, slices, ("user_id",), top_level=True, measures=("run_count",))
    return sum(1 for (user_id,) in rows if user_id is not None)


def _agent_names(agent_ids) -> dict[int, str]:
    Agent = apps.get_model("agents", "Agent")
    return dict(Agent.objects.filter(pk__in=list(agent_ids)).values_list("pk", "name"))


def by_agent(scope: SpendScope, slices: rollup.Slices) -> list[dict]:
    """Adoption: runs per agent, delegated rows included (bars may exceed total_runs)."""
    rows = run_groups(scope, slices, ("agent_id", "top_level"), measures=("run_count",))
    agents: dict[int, dict] = {}
    for (agent_id, top_level), row in rows.items():
        agent = agents.setdefault(
            agent_id, {"agent_id": agent_id, "run_count": 0, "delegated_run_count": 0}
        )
        agent["run_count"] += row["run_count"]
        if not top_level:
            agent["delegated_run_count"] += row["run_count"]
    names = _agent_names(agents)
    result = [{"agent_name": names.get(agent_id, ""), **row} for agent_id, row in agents.items()]
    return sorted(result, key=lambda row: (-row["run_count"], row["agent_name"], row["agent_id"]))


def by_version(scope: SpendScope, slices: rollup.Slices) -> list[dict]:
    """The version comparison: per published version, delegated rows included — runs, how they
    ended, their own spend (a floor where ``partial_run_count`` says so) and their thumbs down."""
    AgentVersion = apps.get_model("agents", "AgentVersion")
    rows = run_groups(
        scope,
        slices,
        ("agent_id", "agent_version_id", "status"),
        measures=("run_count", "cost_usd", "partial_run_count", "down_rated_run_count"),
    )
    versions: dict[tuple, dict] = {}
    for (agent_id, version_id, status), row in rows.items():
        version = versions.setdefault(
            (agent_id, version_id),
            {
                "agent_id": agent_id,
                "agent_version_id": version_id,
                "run_count": 0,
                "completed": 0,
                "failed": 0,
                "cost_usd": ZERO,
                "partial_run_count": 0,
                "down_rated_runs": 0,
            },
        )
        version["run_count"] += row["run_count"]
        version["completed"] += row["run_count"] if status == "completed" else 0
        version["failed"] += row["run_count"] if status == "failed" else 0
        version["cost_usd"] += row["cost_usd"]
        version["partial_run_count"] += row["partial_run_count"]
        version["down_rated_runs"] += row["down_rated_run_count"]
    names = _agent_names({agent_id for agent_id, _ in versions})
    numbers = dict(
        AgentVersion.objects.filter(pk__in=[v for _, v in versions]).values_list("pk", "number")
    )
    result = [
        {
            **row,
            "agent_name": names.get(row["agent_id"], ""),
            "version": numbers.get(row["agent_version_id"]),
        }
        for row in versions.values()
    ]
    return sorted(result, key=lambda row: (row["agent_name"], row["agent_id"], row["version"]))


def quality(scope: SpendScope, slices: rollup.Slices, window: SpendWindow) -> dict:
    """Ratings on the window's top-level runs: thumbs up and down, how many runs were rated, the
    share of positive thumbs (None when nobody rated) and ``daily``, one point per UTC day of the
    window (days without a rating as zeros).

    A day's point counts the thumbs on the runs that *started* that day, not the ratings set that
    day (``GET /ratings/summary/`` answers that one): the card's bars are then the rows behind
    them — the day's ``?rated=down`` in Activity lists exactly the runs its bar counts."""
    measures = ("run_count", "thumbs_up", "thumbs_down", "rated_run_count")
    per_day = {
        key[0]: row
        for key, row in run_groups(
            scope, slices, ("day",), top_level=True, measures=measures
        ).items()
    }
    up = sum(row["thumbs_up"] for row in per_day.values())
    down = sum(row["thumbs_down"] for row in per_day.values())
    total = up + down
    return {
        "up": up,
        "down": down,
        "rated_runs": sum(row["rated_run_count"] for row in per_day.values()),
        "up_share": None if total == 0 else round(up / total, 4),
        "daily": [
            {
                "date": day,
                "up": per_day[day]["thumbs_up"] if day in per_day else 0,
                "down": per_day[day]["thumbs_down"] if day in per_day else 0,
            }
            for day in window.days()
        ],
    }


def approvals_waiting(scope: SpendScope, slices: rollup.Slices) -> int:
    """Runs of the window parked on a decision, with no delegation filter (a parked child is a
    stuck parent): the approvals card, which the donut's awaiting_approval segment equals."""
    rows = run_groups(scope, slices, ("status",), measures=("run_count",))
    return rows.get(("awaiting_approval",), {}).get("run_count", 0)


def usage_cards(
    scope: SpendScope,
    window: SpendWindow,
    *,
    group_by: str | None = None,
    slices: rollup.Slices | None = None,
) -> dict:
    """Every card's block over one window. ``by_user`` names people: only for runs:view (a scope
    floored to one person sees only their own row)."""
    slices = slices or window_slices(scope, window)
    cards: dict = {
        "by_provider": spend_by_provider(scope, window, slices=slices),
        "outcomes": outcomes(scope, slices),
        "approvals_waiting": approvals_waiting(scope, slices),
        "surfaces": surfaces(scope, slices),
        "latency": latency(scope, slices),
        "active_people": active_people(scope, slices),
        "by_user": spend_by_user(scope, window, slices=slices),
        "by_agent": by_agent(scope, slices),
        "quality": quality(scope, slices, window),
    }
    if group_by == "version":
        cards["by_version"] = by_version(scope, slices)
    return cards
