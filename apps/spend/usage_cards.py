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

import datetime as dt

from django.apps import apps
from django.db.models import (
    Aggregate,
    Count,
    DurationField,
    Exists,
    ExpressionWrapper,
    F,
    FloatField,
    OuterRef,
    Q,
    QuerySet,
    Sum,
    Value,
)
from django.db.models.functions import Coalesce, TruncDate

from .aggregates import (
    MONEY_FIELD,
    RUN_IS_PARTIAL,
    ZERO,
    SpendScope,
    spend_by_provider,
    spend_by_user,
    window_runs,
)
from .filters import SpendWindow

PERCENTILES = {"p50": 0.5, "p95": 0.95, "p99": 0.99}


class PercentileCont(Aggregate):
    """PostgreSQL's ``percentile_cont(f) WITHIN GROUP (ORDER BY expr)``: a percentile in SQL."""

    function = "percentile_cont"
    template = "%(function)s(%(fraction)s) WITHIN GROUP (ORDER BY %(expressions)s)"
    output_field = FloatField()

    def __init__(self, expression, fraction: float, **extra) -> None:
        super().__init__(expression, fraction=float(fraction), **extra)


def _duration_ms():
    # Seconds of (ended_at - started_at), times 1000; only finished runs have one.
    return ExpressionWrapper(F("ended_at") - F("started_at"), output_field=DurationField())


def outcomes(runs: QuerySet) -> dict[str, int]:
    """The donut: top-level window runs per status; the segments sum to total_runs."""
    return {
        row["status"]: row["n"]
        for row in runs.order_by().values("status").annotate(n=Count("pk")).order_by("status")
    }


def surfaces(runs: QuerySet) -> list[dict]:
    rows = runs.order_by().values("surface").annotate(run_count=Count("pk"))
    return sorted(
        ({"surface": r["surface"], "run_count": r["run_count"]} for r in rows),
        key=lambda row: (-row["run_count"], row["surface"]),
    )


def latency(runs: QuerySet) -> dict:
    """p50/p95/p99 of top-level runs that finished (an unfinished run has no duration: left out,
    not counted as zero), in milliseconds; None when none finished."""
    from django.db.models.functions import Extract

    finished = runs.filter(started_at__isnull=False, ended_at__isnull=False).annotate(
        took=Extract(_duration_ms(), "epoch") * Value(1000.0)
    )
    figures = finished.aggregate(
        finished_runs=Count("pk"),
        **{name: PercentileCont("took", fraction) for name, fraction in PERCENTILES.items()},
    )
    return {
        "finished_runs": figures["finished_runs"],
        **{name: None if figures[name] is None else round(figures[name]) for name in PERCENTILES},
    }


def active_people(runs: QuerySet) -> int:
    return runs.filter(user_id__isnull=False).values("user_id").distinct().count()


def by_agent(scope: SpendScope, window: SpendWindow) -> list[dict]:
    """Adoption: runs per agent, delegated rows included (bars may exceed total_runs)."""
    rows = (
        window_runs(scope, window, top_level=False)
        .order_by()
        .values("agent_id", agent_name=F("agent__name"))
        .annotate(
            run_count=Count("pk"),
            delegated_run_count=Count("pk", filter=Q(parent_run__isnull=False)),
        )
    )
    return sorted(
        (dict(row) for row in rows),
        key=lambda row: (-row["run_count"], row["agent_name"], row["agent_id"]),
    )


def by_version(scope: SpendScope, window: SpendWindow) -> list[dict]:
    """The version comparison: per published version, delegated rows included — runs, how they
    ended, their own spend (a floor where ``partial_run_count`` says so) and their thumbs down."""
    Rating = apps.get_model("ratings", "MessageRating")
    rows = (
        window_runs(scope, window, top_level=False)
        .annotate(down=Exists(Rating.objects.filter(run_id=OuterRef("pk"), thumb="down")))
        .order_by()
        .values(
            "agent_id",
            "agent_version_id",
            agent_name=F("agent__name"),
            version=F("agent_version__number"),
        )
        .annotate(
            run_count=Count("pk"),
            completed=Count("pk", filter=Q(status="completed")),
            failed=Count("pk", filter=Q(status="failed")),
            cost_usd=Coalesce(Sum("spent"), Value(ZERO), output_field=MONEY_FIELD),
            partial_run_count=Count("pk", filter=RUN_IS_PARTIAL),
            down_rated_runs=Count("pk", filter=Q(down=True)),
        )
    )
    return sorted(
        (dict(row) for row in rows),
        key=lambda row: (row["agent_name"], row["agent_id"], row["version"]),
    )


def quality(runs: QuerySet, window: SpendWindow) -> dict:
    """Ratings on the window's top-level runs: thumbs up and down, how many runs were rated, the
    share of positive thumbs (None when nobody rated) and ``daily``, one point per UTC day of the
    window (days without a rating as zeros).

    A day's point counts the thumbs on the runs that *started* that day, not the ratings set that
    day (``GET /ratings/summary/`` answers that one): the card's bars are then the rows behind
    them — the day's ``?rated=down`` in Activity lists exactly the runs its bar counts."""
    Rating = apps.get_model("ratings", "MessageRating")
    ratings = Rating.objects.filter(run__in=runs.values("pk"))
    figures = ratings.aggregate(
        up=Count("pk", filter=Q(thumb="up")),
        down=Count("pk", filter=Q(thumb="down")),
        rated_runs=Count("run_id", distinct=True),
    )
    total = figures["up"] + figures["down"]
    per_day = {
        row["day"]: row
        for row in runs.annotate(day=TruncDate("started", tzinfo=dt.UTC))
        .order_by()
        .values("day")
        .annotate(
            up=Count("ratings", filter=Q(ratings__thumb="up")),
            down=Count("ratings", filter=Q(ratings__thumb="down")),
        )
    }
    return {
        **figures,
        "up_share": None if total == 0 else round(figures["up"] / total, 4),
        "daily": [
            {
                "date": day,
                "up": per_day[day]["up"] if day in per_day else 0,
                "down": per_day[day]["down"] if day in per_day else 0,
            }
            for day in window.days()
        ],
    }


def approvals_waiting(scope: SpendScope, window: SpendWindow) -> int:
    """Runs of the window parked on a decision, with no delegation filter (a parked child is a
    stuck parent): the approvals card, which the donut's awaiting_approval segment equals."""
    return window_runs(scope, window, top_level=False).filter(status="awaiting_approval").count()


def usage_cards(scope: SpendScope, window: SpendWindow, *, group_by: str | None = None) -> dict:
    """Every card's block over one window. ``by_user`` names people: only for runs:view (a scope
    floored to one person sees only their own row)."""
    top = window_runs(scope, window)
    cards: dict = {
        "by_provider": spend_by_provider(scope, window),
        "outcomes": outcomes(top),
        "approvals_waiting": approvals_waiting(scope, window),
        "surfaces": surfaces(top),
        "latency": latency(top),
        "active_people": active_people(top),
        "by_user": spend_by_user(scope, window),
        "by_agent": by_agent(scope, window),
        "quality": quality(top, window),
    }
    if group_by == "version":
        cards["by_version"] = by_version(scope, window)
    return cards
