"""The window of the spend screen, GET /spend, GET /stats/usage and the spend export.

Seed 003, "Qué muestra la pantalla de coste": the window comes two ways, because the page asks
for both — ``days`` for the last-N-days presets and ``from``/``to`` for this month, last month and
a calendar range. ``from`` wins when both arrive (an explicit range is more specific than a
default nobody changed) and ``period_days`` is then null instead of repeating a number the range
contradicts. Every panel reads the one resolved ``since``/``until``, so two adjacent figures can
never describe different runs.

A value outside its type is a 422 naming the field, never an empty answer.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from django.core.exceptions import ValidationError
from django.utils import timezone

from agenticos import params as parsing
from apps.audit.selectors import Window, parse_window

DEFAULT_DAYS = 30
MAX_DAYS = 366


@dataclass(frozen=True)
class SpendWindow:
    """Both ends inclusive (a date as ``to`` means the whole of that day), in UTC."""

    since: dt.datetime
    until: dt.datetime
    # The preset that produced the window; None when an explicit from/to did.
    period_days: int | None = None

    @property
    def window(self) -> Window:
        return Window(self.since, self.until)

    def days(self) -> list[dt.date]:
        """Every UTC day the window touches, in order (the daily series' x axis)."""
        first, last = self.since.astimezone(dt.UTC).date(), self.until.astimezone(dt.UTC).date()
        return [first + dt.timedelta(days=n) for n in range((last - first).days + 1)]

    def as_query(self) -> dict[str, str]:
        """The window as an explicit range, for links that must carry it (the CSV download)."""
        return {"from": self.since.isoformat(), "to": self.until.isoformat()}

    def as_dict(self) -> dict:
        return {
            "since": self.since.isoformat(),
            "until": self.until.isoformat(),
            "period_days": self.period_days,
        }


def last_days(days: int, *, now: dt.datetime | None = None) -> SpendWindow:
    """The last ``days`` UTC calendar days, today included, up to now: N days are N bars."""
    now = (now or timezone.now()).astimezone(dt.UTC)
    start = dt.datetime.combine(
        now.date() - dt.timedelta(days=days - 1), dt.time.min, tzinfo=dt.UTC
    )
    return SpendWindow(since=start, until=now, period_days=days)


def parse_spend_window(params, *, now: dt.datetime | None = None) -> SpendWindow:
    """``days`` (1..366, default 30) or ``from`` [+ ``to``, default now]; ``from`` wins."""
    now = now or timezone.now()
    explicit = parse_window(params, "from", "to")  # 422 on a bad date or to < from
    if explicit.start is not None:
        until = explicit.end or now
        if until < explicit.start:
            raise ValidationError({"from": ["must not be in the future when to is not given"]})
        return SpendWindow(since=explicit.start, until=until, period_days=None)
    if explicit.end is not None:
        raise ValidationError({"from": ["is required when to is given"]})
    raw = (params.get("days") or "").strip()
    if not raw:
        return last_days(DEFAULT_DAYS, now=now)
    errors: dict[str, list[str]] = {}
    days = parsing.parse_int("days", raw, errors, minimum=1, maximum=MAX_DAYS)
    if days is None:
        raise ValidationError({"days": [f"must be a whole number of days from 1 to {MAX_DAYS}"]})
    return last_days(days, now=now)


def parse_export_window(params) -> Window:
    """The export's window: an explicit from/to only. A ``days`` preset is not a range an export
    accepts — the exporter refuses a window without both ends (seed 003, "Tamaño"); the console
    resolves its preset into from/to before linking the download."""
    return parse_window(params, "from", "to")
