"""A schedule trigger's timing: parsed from the API's ``schedule`` object and written as a
django-celery-beat entry (so beat fires it, and the admin shows and pauses it).

``{"cron": "0 9 * * 1-5", "timezone": "Europe/Madrid"}`` — five fields (minute hour
day-of-month month day-of-week), read in the timezone (default UTC); or
``{"every_seconds": 3600}`` — an interval, at least a minute.
"""

from __future__ import annotations

import datetime as dt
import json
import zoneinfo

from celery.schedules import crontab
from django.core.exceptions import ValidationError
from django.utils import timezone

MIN_INTERVAL_SECONDS = 60
MAX_INTERVAL_SECONDS = 366 * 24 * 3600
FIRE_TASK = "apps.triggers.tasks.fire_scheduled_trigger"
CRON_FIELDS = ("minute", "hour", "day_of_month", "month_of_year", "day_of_week")


def _refuse(message: str):
    raise ValidationError({"schedule": message})


def parse_schedule(raw) -> dict:
    """The normalised schedule, or a ValidationError naming ``schedule``."""
    if not isinstance(raw, dict):
        _refuse('must be an object: {"cron": "...", "timezone": "..."} or {"every_seconds": N}')
    unknown = set(raw) - {"cron", "timezone", "every_seconds"}
    if unknown:
        _refuse(f"unknown key(s): {', '.join(sorted(unknown))}")
    has_cron, has_every = raw.get("cron") is not None, raw.get("every_seconds") is not None
    if has_cron == has_every:
        _refuse("give exactly one of cron or every_seconds")
    name = raw.get("timezone") or "UTC"
    if not isinstance(name, str):
        _refuse("timezone must be an IANA name such as Europe/Madrid")
    try:
        zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        _refuse(f"{name!r} is not an IANA timezone (for example Europe/Madrid)")
    if has_every:
        every = raw["every_seconds"]
        if isinstance(every, bool) or not isinstance(every, int):
            _refuse("every_seconds must be an integer")
        if not MIN_INTERVAL_SECONDS <= every <= MAX_INTERVAL_SECONDS:
            _refuse(
                f"every_seconds must be between {MIN_INTERVAL_SECONDS} and {MAX_INTERVAL_SECONDS}"
            )
        return {"every_seconds": every, "timezone": name}
    cron = raw["cron"]
    if not isinstance(cron, str) or len(cron.split()) != 5:
        _refuse("cron must be five fields: minute hour day-of-month month day-of-week")
    fields = dict(zip(CRON_FIELDS, cron.split(), strict=True))
    try:
        crontab(**fields)
    except (ValueError, TypeError) as exc:
        _refuse(f"cron {cron!r} does not parse: {exc}")
    return {"cron": " ".join(cron.split()), "timezone": name}


def beat_schedule_rows(schedule: dict) -> dict:
    """The ``crontab`` or ``interval`` field of a PeriodicTask for this schedule."""
    from django_celery_beat.models import CrontabSchedule, IntervalSchedule

    if "every_seconds" in schedule:
        interval, _ = IntervalSchedule.objects.get_or_create(
            every=schedule["every_seconds"], period=IntervalSchedule.SECONDS
        )
        return {"interval": interval, "crontab": None}
    fields = dict(zip(CRON_FIELDS, schedule["cron"].split(), strict=True))
    row = CrontabSchedule.objects.filter(**fields, timezone=schedule["timezone"]).first()
    if row is None:
        row = CrontabSchedule.objects.create(**fields, timezone=schedule["timezone"])
    return {"crontab": row, "interval": None}


def beat_kwargs(trigger_id: int) -> str:
    return json.dumps({"trigger_id": trigger_id})


def next_fire(periodic_task, *, now: dt.datetime | None = None) -> dt.datetime | None:
    """When beat will fire it next, or None when it is paused."""
    if periodic_task is None or not periodic_task.enabled:
        return None
    now = now or timezone.now()
    schedule = periodic_task.schedule
    last = periodic_task.last_run_at or periodic_task.date_changed or now
    # Celery measures what remains from the schedule's own clock (Django's now) to the next run.
    remaining = schedule.remaining_estimate(last)
    return now + max(remaining, dt.timedelta(0))
