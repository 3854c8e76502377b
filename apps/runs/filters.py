"""The run history's filters and orders, parsed once for the API and the Activity page.

Seed 003, "Acotar el historial de runs": every value is checked against its type and a value
outside it is refused (a 422 on the API, a form error in the console) instead of being compared
against nothing — ``?status=complete`` would otherwise answer an empty page, and an empty page
reads as "nothing went wrong this week". ``order_by`` takes one of four orders, never a column
name: an ORDER BY built from a query string is an injection surface.

``period`` (``30d``: the last 30 UTC calendar days, today included) is the dashboard's window
carried into Activity, so ``/runs?surface=slack&period=30d`` lists exactly the runs the card that
linked there counted: both read ``apps.spend.filters.last_days``. It is a second way to name the
window, so with ``started_from`` or ``started_to`` beside it the request is refused (naming
``period``) — preferring one silently would list other rows than the link promised.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from agenticos import params as parsing
from apps.spend.filters import last_days

from .choices import RunStatus, Surface

ORDERS = ("started_at", "duration", "cost", "tokens")
RATINGS = ("up", "down")
# What the slow-runs view of Activity means by slow (seed 003: "un umbral took_over_ms (30 s)").
SLOW_RUN_MS = 30_000
# Ten years: past it Python's timedelta (the duration compared against) overflows.
TOOK_OVER_MS_MAX = 10 * 366 * 24 * 3600 * 1000

_TRUE = {"true", "1", "yes"}
_FALSE = {"false", "0", "no"}


@dataclass(frozen=True)
class RunHistoryFilters:
    statuses: tuple[str, ...] = ()
    surfaces: tuple[str, ...] = ()
    user_ids: tuple[int, ...] = ()
    model_labels: tuple[str, ...] = ()
    started_from: dt.datetime | None = None
    # Exclusive upper bound, already widened to the end of the day when a date was given.
    started_before: dt.datetime | None = None
    # The window asked for as a period (``30d``): started_from is then its first day's midnight.
    period_days: int | None = None
    environment_id: int | None = None
    exposure_id: int | None = None
    agent_version_id: int | None = None
    took_over_ms: int | None = None
    rated: str | None = None
    order_by: str = "started_at"
    descending: bool = True
    agent_id: int | None = None
    include_delegations: bool = False
    parent_run_id: int | None = None


def _ints(name: str, values: list[str], errors: dict) -> tuple[int, ...]:
    return parsing.parse_ids(name, values, errors)


def _one(name: str, values: list[str], errors: dict) -> str | None:
    values = [value for value in values if value != ""]
    if not values:
        return None
    if len(values) > 1:
        errors.setdefault(name, []).append("give it once")
    return values[-1]


def _int(name: str, values: list[str], errors: dict) -> int | None:
    value = _one(name, values, errors)
    return None if value is None else parsing.parse_id(name, value, errors)


def _bool(name: str, values: list[str], errors: dict, default: bool) -> bool:
    value = _one(name, values, errors)
    if value is None:
        return default
    if value.lower() in _TRUE:
        return True
    if value.lower() in _FALSE:
        return False
    errors.setdefault(name, []).append(f"{value!r} is not true or false")
    return default


def _choices(name: str, values: list[str], allowed, errors: dict) -> tuple[str, ...]:
    allowed = set(allowed)
    chosen = []
    for value in values:
        if value == "":
            continue
        if value not in allowed:
            errors.setdefault(name, []).append(
                f"{value!r} is not one of {', '.join(sorted(allowed))}"
            )
            continue
        chosen.append(value)
    return tuple(dict.fromkeys(chosen))


def _moment(name: str, values: list[str], errors: dict, *, end_of_day: bool) -> dt.datetime | None:
    """A date (a whole day, inclusive) or an ISO datetime. For the upper end, the exclusive bound."""
    value = _one(name, values, errors)
    if value is None:
        return None
    moment = parsing.parse_day_or_moment(name, value, errors)
    if moment is None:
        return None
    if not isinstance(moment, dt.datetime):
        # A range picker hands over whole days: both ends are inclusive (seed 003).
        start = dt.datetime.combine(moment, dt.time.min, tzinfo=dt.UTC)
        return start + dt.timedelta(days=1) if end_of_day else start
    # An exact instant is inclusive too: the exclusive bound is one microsecond later.
    return moment + dt.timedelta(microseconds=1) if end_of_day else moment


def parse_run_history(params, *, now: dt.datetime | None = None) -> RunHistoryFilters:
    """Parse a QueryDict (or a dict of lists). Raises ValidationError naming every bad field."""

    def values(name: str) -> list[str]:
        if hasattr(params, "getlist"):
            return [v for v in params.getlist(name)]
        raw = params.get(name, [])
        return list(raw) if isinstance(raw, (list, tuple)) else [raw]

    errors: dict[str, list[str]] = {}
    order_by = _one("order_by", values("order_by"), errors) or "started_at"
    if order_by not in ORDERS:
        errors.setdefault("order_by", []).append(f"{order_by!r} is not one of {', '.join(ORDERS)}")
        order_by = "started_at"
    took_over = _one("took_over_ms", values("took_over_ms"), errors)
    took_over_ms = (
        None
        if took_over is None
        else parsing.parse_int("took_over_ms", took_over, errors, maximum=TOOK_OVER_MS_MAX)
    )
    rated = _one("rated", values("rated"), errors)
    if rated is not None and rated not in RATINGS:
        errors.setdefault("rated", []).append(f"{rated!r} is not up or down")
        rated = None
    started_from = _moment("started_from", values("started_from"), errors, end_of_day=False)
    started_before = _moment("started_to", values("started_to"), errors, end_of_day=True)
    period = _one("period", values("period"), errors)
    period_days = None if period is None else parsing.parse_period("period", period, errors)
    if period is not None and any(v != "" for v in values("started_from") + values("started_to")):
        errors.setdefault("period", []).append(
            "give either a period or started_from/started_to, not both"
        )
    if period_days is not None:
        started_from = last_days(period_days, now=now).since
    filters = RunHistoryFilters(
        statuses=_choices("status", values("status"), RunStatus.values, errors),
        surfaces=_choices("surface", values("surface"), Surface.values, errors),
        user_ids=_ints("user_id", [v for v in values("user_id") if v != ""], errors),
        model_labels=parsing.parse_texts("model_label", values("model_label"), errors),
        started_from=started_from,
        started_before=started_before,
        period_days=period_days,
        environment_id=_int("environment_id", values("environment_id"), errors),
        exposure_id=_int("exposure_id", values("exposure_id"), errors),
        agent_version_id=_int("agent_version_id", values("agent_version_id"), errors),
        took_over_ms=took_over_ms,
        rated=rated,
        order_by=order_by,
        descending=_bool("descending", values("descending"), errors, default=True),
        agent_id=_int("agent_id", values("agent_id"), errors),
        include_delegations=_bool(
            "include_delegations", values("include_delegations"), errors, default=False
        ),
        parent_run_id=_int("parent_run_id", values("parent_run_id"), errors),
    )
    parsing.raise_errors(errors)
    return filters
