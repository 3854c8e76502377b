"""The per-day rollup behind GET /spend and GET /stats/usage (docs/spend.md, "The per-day rollup").

Every figure of those pages is a sum over one organization's runs (and ledger entries) grouped
by something; summed per UTC day at the finest grouping any breakdown asks for, a window of 30
days is 30 days of a few hundred rows instead of a scan of every run. A day's rows are a
*cache*, rebuilt whole from the runs and the ledger when the day changed, never adjusted
in place, so they cannot drift from the ledger:

- the database logs every change to a run, a ledger, a ledger entry or a rating as "this
  transaction changed day D of organization O" (``SpendDayChange``, written by the triggers of
  migration 0007 — no write path has to remember to call anything);
- a day's build records the snapshot and the change-log sequence it read (``SpendDayBuild``);
  the day is current while every change logged for it was inside that build (an earlier
  sequence number from a transaction the snapshot saw, or the builder's own) — a change
  committed later, or in flight while the build read, makes it stale;
- today is built by the hour (the log records the hour too), so a write to today makes one
  hour stale, not the day; a closed day is one build;
- a reader asks for the days of its window, rebuilds the stale ones (one set-based statement per
  table over each run of consecutive days, under a per-organization advisory lock), and reads
  the rows. A window edge inside a day (``from``/``to`` with a time, or ``to`` before the day's
  latest row) is read live with the same statements over that part of the day.

The statements below are the only definition of every figure: the live part runs them as a
SELECT, a build runs them as INSERT … SELECT, so the two cannot answer differently.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from decimal import Decimal

from django.db import connection, transaction
from django.db.models import Q

ONE_DAY = dt.timedelta(days=1)
ONE_MICROSECOND = dt.timedelta(microseconds=1)
_LOCK_CLASS = 24_024  # pg_advisory_xact_lock(class, organization): one builder per organization

# --- the statements -------------------------------------------------------------------------------
# Each selects one organization's rows whose start (or booking) falls in [%(lo)s, %(hi)s).

_STARTED = "COALESCE(r.started_at, r.created_at)"
_DAY = "((COALESCE(r.started_at, r.created_at)) AT TIME ZONE 'UTC')::date"


def _hour(moment: str) -> str:
    """The UTC hour of ``moment`` when building today's hours (``%(hourly)s``), else NULL."""
    return (
        f"CASE WHEN %(hourly)s THEN EXTRACT(hour FROM ({moment}) AT TIME ZONE 'UTC')::smallint END"
    )


RUN_DIMS = (
    "day",
    "top_level",
    "agent_id",
    "agent_version_id",
    "user_id",
    "provider",
    "status",
    "surface",
)
RUN_MEASURES = (
    "run_count",
    "partial_run_count",
    "cost_usd",
    "own_usd",
    "input_tokens",
    "output_tokens",
    "thumbs_up",
    "thumbs_down",
    "rated_run_count",
    "down_rated_run_count",
)
RUNS_SQL = f"""
WITH rr AS (
    SELECT r.id, r.parent_run_id, r.agent_id, r.agent_version_id, r.user_id, r.model_provider,
        r.status, r.surface, {_DAY} AS day, {_hour(_STARTED)} AS hour,
        -- What a run has spent: a live run's ledger grows before its row gets the figure.
        GREATEST(r.cost_usd, COALESCE(l.cost_usd, 0)) AS spent,
        (r.cost_is_partial OR COALESCE(l.cost_is_partial, false)) AS partial,
        GREATEST(r.input_tokens, COALESCE(l.input_tokens, 0)) AS input_tokens,
        GREATEST(r.output_tokens, COALESCE(l.output_tokens, 0)) AS output_tokens
    FROM runs_run r LEFT JOIN spend_ledger l ON l.run_id = r.id
    WHERE r.organization_id = %(org)s AND {_STARTED} >= %(lo)s AND {_STARTED} < %(hi)s
), d1 AS (
    SELECT c.id, rr.id AS root_id FROM rr JOIN runs_run c ON c.parent_run_id = rr.id
    WHERE rr.parent_run_id IS NULL
), d2 AS (
    SELECT c.id, d1.root_id FROM d1 JOIN runs_run c ON c.parent_run_id = d1.id
), d3 AS (
    SELECT c.id, d2.root_id FROM d2 JOIN runs_run c ON c.parent_run_id = d2.id
), discount AS (
    -- A top-level row's cost is its tree's whole ledger, a delegated row's only its own: the
    -- root gives back every delegated row of its tree (three levels at most), wherever it started.
    SELECT t.root_id, SUM(GREATEST(c.cost_usd, COALESCE(l.cost_usd, 0))) AS total
    FROM (SELECT * FROM d1 UNION ALL SELECT * FROM d2 UNION ALL SELECT * FROM d3) AS t
    JOIN runs_run c ON c.id = t.id LEFT JOIN spend_ledger l ON l.run_id = c.id
    GROUP BY t.root_id
), thumbs AS (
    SELECT m.run_id, COUNT(*) FILTER (WHERE m.thumb = 'up') AS up,
        COUNT(*) FILTER (WHERE m.thumb = 'down') AS down
    FROM rr JOIN message_ratings m ON m.run_id = rr.id GROUP BY m.run_id
)
SELECT rr.day, rr.hour, rr.parent_run_id IS NULL AS top_level, rr.agent_id, rr.agent_version_id,
    rr.user_id, rr.model_provider AS provider, rr.status, rr.surface,
    COUNT(*) AS run_count, COUNT(*) FILTER (WHERE rr.partial) AS partial_run_count,
    SUM(rr.spent) AS cost_usd, SUM(rr.spent - COALESCE(discount.total, 0)) AS own_usd,
    SUM(rr.input_tokens) AS input_tokens, SUM(rr.output_tokens) AS output_tokens,
    COALESCE(SUM(thumbs.up), 0) AS thumbs_up, COALESCE(SUM(thumbs.down), 0) AS thumbs_down,
    COUNT(thumbs.run_id) AS rated_run_count,
    COUNT(*) FILTER (WHERE thumbs.down > 0) AS down_rated_run_count
FROM rr LEFT JOIN discount ON discount.root_id = rr.id LEFT JOIN thumbs ON thumbs.run_id = rr.id
GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9
"""

LATENCY_DIMS = ("day", "user_id", "duration_ms")
LATENCY_SQL = f"""
SELECT {_DAY} AS day, {_hour(_STARTED)} AS hour, r.user_id,
    ROUND(EXTRACT(epoch FROM r.ended_at - r.started_at) * 1000)::bigint AS duration_ms,
    COUNT(*) AS run_count
FROM runs_run r
WHERE r.organization_id = %(org)s AND {_STARTED} >= %(lo)s AND {_STARTED} < %(hi)s
    AND r.parent_run_id IS NULL AND r.started_at IS NOT NULL AND r.ended_at IS NOT NULL
GROUP BY 1, 2, 3, 4
"""

ENTRY_DIMS = ("day", "month", "kind", "agent_id", "user_id")
ENTRY_MEASURES = ("cost_usd", "entry_count", "unpriced_count")
ENTRIES_SQL = f"""
SELECT (e.created_at AT TIME ZONE 'UTC')::date AS day, {_hour("e.created_at")} AS hour, e.month, e.kind, e.agent_id, r.user_id,
    SUM(e.cost_usd) AS cost_usd, COUNT(*) AS entry_count,
    COUNT(*) FILTER (WHERE NOT e.priced) AS unpriced_count
FROM spend_ledgerentry e
    LEFT JOIN spend_ledger l ON l.id = e.ledger_id LEFT JOIN runs_run r ON r.id = l.run_id
WHERE e.organization_id = %(org)s AND e.created_at >= %(lo)s AND e.created_at < %(hi)s
GROUP BY 1, 2, 3, 4, 5, 6
"""

# Unpriced delegated rows with their tree's root (the deepest of three parent hops that exists),
# kept when the root started before ``{before}``: the day's start for the cache (only a tree
# rooted on an earlier day can cross a window starting at midnight), the window's start live.
CROSSING_COLUMNS = (
    "day",
    "run_id",
    "root_id",
    "root_started_at",
    "started_at",
    "agent_id",
    "user_id",
)
CROSSING_SQL = f"""
SELECT * FROM (
    SELECT {_DAY} AS day, {_hour(_STARTED)} AS hour, r.id AS run_id, COALESCE(p3.id, p2.id, p1.id) AS root_id,
        COALESCE(p3.started_at, p2.started_at, p1.started_at) AS root_started_at,
        r.started_at, r.agent_id, r.user_id
    FROM runs_run r JOIN runs_run p1 ON p1.id = r.parent_run_id
        LEFT JOIN runs_run p2 ON p2.id = p1.parent_run_id
        LEFT JOIN runs_run p3 ON p3.id = p2.parent_run_id
    WHERE r.organization_id = %(org)s AND {_STARTED} >= %(lo)s AND {_STARTED} < %(hi)s
        AND r.cost_is_partial AND r.started_at IS NOT NULL
) AS x
WHERE root_started_at < {{before}}
"""
_CROSSING_BEFORE_DAY = "(day::timestamp AT TIME ZONE 'UTC')"

# Every table: (its statement, the columns it inserts, and the crossing's extra filter).
_TABLES = (
    ("spend_spenddayruns", RUNS_SQL, ("hour", *RUN_DIMS, *RUN_MEASURES)),
    ("spend_spenddaylatency", LATENCY_SQL, ("hour", *LATENCY_DIMS, "run_count")),
    ("spend_spenddayentries", ENTRIES_SQL, ("hour", *ENTRY_DIMS, *ENTRY_MEASURES)),
    (
        "spend_spenddaycrossing",
        CROSSING_SQL.format(before=_CROSSING_BEFORE_DAY),
        ("hour", *CROSSING_COLUMNS),
    ),
)

COVERS_SQL = f"""
SELECT day, hour, MAX(moment) FROM (
    SELECT {_DAY} AS day, {_hour(_STARTED)} AS hour, {_STARTED} AS moment FROM runs_run r
    WHERE r.organization_id = %(org)s AND {_STARTED} >= %(lo)s AND {_STARTED} < %(hi)s
    UNION ALL
    SELECT (e.created_at AT TIME ZONE 'UTC')::date, {_hour("e.created_at")}, e.created_at
    FROM spend_ledgerentry e
    WHERE e.organization_id = %(org)s AND e.created_at >= %(lo)s AND e.created_at < %(hi)s
) AS x GROUP BY day, hour
"""

# A day's build is current while no change logged for it is outside the build.
CURRENT_SQL = """
SELECT b.day, b.hour, b.covers_until,
    (clock_timestamp() AT TIME ZONE 'UTC')::date AS today
FROM spend_spenddaybuild b
WHERE b.organization_id = %(org)s AND b.day = ANY(%(days)s::date[])
    AND NOT EXISTS (
        SELECT 1 FROM spend_spenddaychange c
        WHERE c.organization_id = b.organization_id AND c.day = b.day
            AND (b.hour IS NULL OR c.hour = b.hour)
            AND (c.seq > b.built_seq OR NOT (
                c.xid = b.builder_xid
                OR pg_visible_in_snapshot(c.xid::text::xid8, b.snapshot::pg_snapshot)))
    )
"""


def _start(day: dt.date) -> dt.datetime:
    return dt.datetime.combine(day, dt.time.min, tzinfo=dt.UTC)


def _fetch(sql: str, params: dict) -> list[dict]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        names = [column.name for column in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def _runs_of(days: Sequence[dt.date]) -> list[tuple[dt.date, dt.date]]:
    """Consecutive days as (first, last) pairs."""
    spans: list[tuple[dt.date, dt.date]] = []
    for day in sorted(days):
        if spans and spans[-1][1] + ONE_DAY == day:
            spans[-1] = (spans[-1][0], day)
        else:
            spans.append((day, day))
    return spans


# --- building -------------------------------------------------------------------------------------
# A slot is a day (hour None: a closed day, built whole) or one hour of today (built alone, so a
# write to today rebuilds an hour of rows rather than a day of them). A day's rows are of one
# kind at a time: building either kind deletes the other's rows and builds of that day.

Slot = tuple[dt.date, int | None]
HOUR = dt.timedelta(hours=1)


def _current(
    organization_id: int, days: Iterable[dt.date]
) -> tuple[dict[dt.date, dict[int | None, dt.datetime | None]], dt.date | None]:
    """The current builds of ``days`` ({day: {hour or None: covers_until}}) and the database's
    UTC day (which days are closed is the database clock's call, the one the triggers use)."""
    rows = _fetch(CURRENT_SQL, {"org": organization_id, "days": list(days)})
    current: dict[dt.date, dict[int | None, dt.datetime | None]] = defaultdict(dict)
    for row in rows:
        current[row["day"]][row["hour"]] = row["covers_until"]
    if rows:
        today = rows[0]["today"]
    else:
        with connection.cursor() as cursor:
            cursor.execute("SELECT (clock_timestamp() AT TIME ZONE 'UTC')::date")
            today = cursor.fetchone()[0]
    return dict(current), today


def _needed(days, current, today) -> list[Slot]:
    """What to build so every day is whole: today's missing hours; any other day whole (a day
    to come too: it is empty, and its first row makes it stale)."""
    slots: list[Slot] = []
    for day in days:
        built = current.get(day, {})
        if None in built:
            continue
        if day != today:
            slots.append((day, None))
        else:
            slots.extend((day, hour) for hour in range(24) if hour not in built)
    return slots


def _slot_arrays(slots: Sequence[Slot]) -> dict:
    return {
        "slot_days": [day for day, _ in slots],
        "slot_hours": [hour for _, hour in slots],
    }


_IN_SLOTS = (
    "(day, hour) IN (SELECT * FROM unnest(%(slot_days)s::date[], %(slot_hours)s::smallint[]))"
)


def _build(cursor, organization_id: int, slots: list[Slot]) -> None:
    # First, what the build will have seen: the snapshot, this transaction's id and the change
    # log's position. Every later statement sees at least as much, so a change it happens to see
    # beyond them only makes the day look stale (rebuilt once more), never current when it is not.
    cursor.execute(
        "SELECT pg_current_snapshot()::text, pg_current_xact_id()::text::bigint, "
        "(SELECT last_value FROM spend_day_change_seq)"
    )
    snapshot, xid, seq = cursor.fetchone()
    whole = sorted(day for day, hour in slots if hour is None)
    hours = sorted((day, hour) for day, hour in slots if hour is not None)
    params = {
        "org": organization_id,
        "whole": whole,
        "hour_days": sorted({day for day, _ in hours}),
        **_slot_arrays(hours),
    }
    # A day rebuilt whole loses every row and build it had; an hour, its own and the day's
    # whole ones (a day is one kind at a time).
    replaced = (
        "organization_id = %(org)s AND (day = ANY(%(whole)s::date[]) OR "
        f"(day = ANY(%(hour_days)s::date[]) AND (hour IS NULL OR {_IN_SLOTS})))"
    )
    for table in ("runs", "latency", "entries", "crossing", "build"):
        cursor.execute(f"DELETE FROM spend_spendday{table} WHERE {replaced}", params)
    spans: list[tuple[dt.datetime, dt.datetime, bool]] = [
        (_start(first), _start(last + ONE_DAY), False) for first, last in _runs_of(whole)
    ]
    for day, hour in hours:
        lo = _start(day) + HOUR * hour
        if spans and spans[-1][2] and spans[-1][1] == lo:
            spans[-1] = (spans[-1][0], lo + HOUR, True)
        else:
            spans.append((lo, lo + HOUR, True))
    covers: dict[Slot, dt.datetime] = {}
    for lo, hi, hourly in spans:
        span = {"org": organization_id, "lo": lo, "hi": hi, "hourly": hourly}
        for table, sql, columns in _TABLES:
            names = ", ".join(columns)
            cursor.execute(
                f"INSERT INTO {table} (organization_id, {names}) "
                f"SELECT %(org)s, {names} FROM ({sql}) AS built",
                span,
            )
        cursor.execute(COVERS_SQL, span)
        covers.update({(day, hour): moment for day, hour, moment in cursor.fetchall()})
    built = [(day, None) for day in whole] + hours
    cursor.execute(
        """
        INSERT INTO spend_spenddaybuild (organization_id, day, hour, snapshot, built_seq,
            builder_xid, covers_until, built_at)
        SELECT %(org)s, s.day, s.hour, %(snapshot)s, %(seq)s, %(xid)s, s.covers_until, now()
        FROM unnest(%(slot_days)s::date[], %(slot_hours)s::smallint[], %(covers)s::timestamptz[])
            AS s(day, hour, covers_until)
        """,
        {
            "org": organization_id,
            "snapshot": snapshot,
            "seq": seq,
            "xid": xid,
            "covers": [covers.get(slot) for slot in built],
            **_slot_arrays(built),
        },
    )
    # The log's rows this build accounts for are spent; later ones stay to make it stale.
    cursor.execute(
        f"""
        DELETE FROM spend_spenddaychange c
        WHERE c.organization_id = %(org)s AND c.seq <= %(seq)s
            AND (c.day = ANY(%(whole)s::date[]) OR {_IN_SLOTS})
            AND (c.xid = %(xid)s
                OR pg_visible_in_snapshot(c.xid::text::xid8, %(snapshot)s::pg_snapshot))
        """,
        {**params, "seq": seq, "xid": xid, "snapshot": snapshot},
    )


def ensure_current(
    organization_id: int, days: Iterable[dt.date]
) -> dict[dt.date, dict[int | None, dt.datetime | None]]:
    """Each day's current builds ({hour or None: covers_until}), the stale ones rebuilt first:
    afterwards every day is whole (one build of the day, or all 24 hours of today)."""
    days = sorted(set(days))
    if not days:
        return {}
    current, today = _current(organization_id, days)
    if _needed(days, current, today):
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s, %s)", [_LOCK_CLASS, organization_id])
            # Another reader may have rebuilt them while this one waited for the lock.
            current, today = _current(organization_id, days)
            needed = _needed(days, current, today)
            if needed:
                _build(cursor, organization_id, needed)
                current, today = _current(organization_id, days)
    return current


# --- what a window reads --------------------------------------------------------------------------


@dataclass
class Slices:
    """A window cut into what is read from the rollup — whole ``days``, and the ``hours`` of a
    day the window ends inside — and the ranges read live (``[lo, hi)``: the parts of the
    window's first and last day the rollup cannot serve)."""

    organization_id: int
    since: dt.datetime
    days: list[dt.date] = field(default_factory=list)
    hours: list[tuple[dt.date, int]] = field(default_factory=list)
    live: list[tuple[dt.datetime, dt.datetime]] = field(default_factory=list)
    _memo: dict = field(default_factory=dict, repr=False)

    @property
    def has_cached(self) -> bool:
        return bool(self.days or self.hours)

    def cached(self) -> Q:
        """The rollup rows of the cached part (every rollup table has ``day`` and ``hour``)."""
        condition = Q(day__in=self.days)
        by_day: dict[dt.date, list[int]] = defaultdict(list)
        for day, hour in self.hours:
            by_day[day].append(hour)
        for day, hours in by_day.items():
            condition |= Q(day=day, hour__in=hours)
        return condition

    def live_rows(self, name: str, sql: str, **params) -> list[dict]:
        """The live ranges' rows of one statement, computed once per Slices."""
        if name not in self._memo:
            rows: list[dict] = []
            for lo, hi in self.live:
                query = {"org": self.organization_id, "lo": lo, "hi": hi, "hourly": False}
                rows.extend(_fetch(sql, {**query, **params}))
            self._memo[name] = rows
        return self._memo[name]


# The rollup can be switched off (every window read live through the same statements): the
# reconciliation test compares both paths, and an operator can rule the cache out.
_LIVE_ONLY: ContextVar[bool] = ContextVar("spend_rollup_live_only", default=False)


@contextmanager
def live_only() -> Iterator[None]:
    """``with rollup.live_only():`` reads every window live, bypassing the cached days."""
    token = _LIVE_ONLY.set(True)
    try:
        yield
    finally:
        _LIVE_ONLY.reset(token)


def slices_for(organization_id: int, since: dt.datetime, until: dt.datetime) -> Slices:
    """Cut the window ``[since, until]`` (both inclusive): the days it covers whole — or up to
    their latest row — from the rollup, the rest live."""
    since, until = since.astimezone(dt.UTC), until.astimezone(dt.UTC)
    slices = Slices(organization_id=organization_id, since=since)
    hi = until + ONE_MICROSECOND
    if _LIVE_ONLY.get():
        slices.live = [(since, hi)]
        return slices
    first, last = since.date(), until.date()
    candidates = [first + ONE_DAY * n for n in range((last - first).days + 1)]
    candidates = [day for day in candidates if _start(day) >= since]
    builds = ensure_current(organization_id, candidates)
    for day in candidates:
        built = builds.get(day, {})
        if _start(day + ONE_DAY) <= hi:
            slices.days.append(day)
        elif None in built:
            # The window ends inside this day: the cache holds it if nothing of the day is
            # later than the window's end.
            latest = built[None]
            if latest is None or latest <= until:
                slices.days.append(day)
            else:
                slices.live.append((_start(day), hi))
        else:
            # Today, by the hour: the hours before the window's end, and the one it ends in
            # when nothing of that hour is later.
            for hour in range(24):
                lo = _start(day) + HOUR * hour
                if lo + HOUR <= hi:
                    slices.hours.append((day, hour))
                elif lo < hi:
                    latest = built.get(hour)
                    if latest is None or latest <= until:
                        slices.hours.append((day, hour))
                    else:
                        slices.live.append((lo, hi))
    head_end = min(_start(first + ONE_DAY), hi) if _start(first) < since else since
    if head_end > since:
        slices.live.insert(0, (since, head_end))
    return slices


def month_slices(organization_id: int, month: dt.date) -> Slices:
    """Every day an entry of ``month`` can have been booked on — the month and a day either
    side, since ``month`` is set by the booking's clock — each current. Days to come are cheap
    (an empty build, made stale by their first row)."""
    first = month - ONE_DAY
    last = (month.replace(day=28) + dt.timedelta(days=4)).replace(day=1)
    slices = Slices(organization_id=organization_id, since=_start(first))
    if _LIVE_ONLY.get():
        slices.live = [(_start(first), _start(last + ONE_DAY))]
        return slices
    slices.days = [first + ONE_DAY * n for n in range((last - first).days + 1)]
    ensure_current(organization_id, slices.days)
    return slices


# --- merging --------------------------------------------------------------------------------------


def merge(
    rows: Iterable[dict], dims: Sequence[str], measures: Sequence[str]
) -> dict[tuple, dict[str, Decimal | int]]:
    """Sum ``measures`` of ``rows`` per ``dims``."""
    merged: dict[tuple, dict] = defaultdict(lambda: dict.fromkeys(measures, 0))
    for row in rows:
        bucket = merged[tuple(row[dim] for dim in dims)]
        for measure in measures:
            bucket[measure] += row[measure] or 0
    return dict(merged)


def percentile_cont(counts: dict[int, int], fraction: float) -> float | None:
    """PostgreSQL's percentile_cont over values given as {value: how many}: linear
    interpolation between the two nearest ranks."""
    total = sum(counts.values())
    if not total:
        return None
    position = fraction * (total - 1)
    lower_rank, weight = int(position), position - int(position)
    values = sorted(counts)
    seen, lower, upper = 0, None, None
    for value in values:
        seen += counts[value]
        if lower is None and seen > lower_rank:
            lower = value
        if seen > lower_rank + 1 or (seen > lower_rank and weight == 0):
            upper = value
            break
    assert lower is not None
    if upper is None:
        upper = lower
    return lower + (upper - lower) * weight
