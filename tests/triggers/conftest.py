"""Triggers' fixtures: Celery in eager mode (a task's body runs here, in the test's transaction)
and a clock beat reads that a test moves instead of sleeping."""

from __future__ import annotations

import datetime as dt

import pytest

from apps.orgs.choices import Role
from apps.triggers.services import trigger_create
from tests.runs.factories import published_agent


@pytest.fixture
def eager_celery():
    from agenticos.celery import app

    eager = app.conf.task_always_eager
    app.conf.task_always_eager = True
    yield app
    app.conf.task_always_eager = eager


class MovedClock:
    """The time django-celery-beat reads (its entries, interval and timezone-aware cron
    schedules), set by the test: ``clock.now = ...`` moves time without sleeping."""

    def __init__(self, start: dt.datetime) -> None:
        self.now = start

    def install(self, monkeypatch) -> None:
        from django_celery_beat.schedulers import ModelEntry

        clock = self

        class MovedDatetime(dt.datetime):
            @classmethod
            def now(cls, tz=None):
                return clock.now.astimezone(tz) if tz else clock.now.replace(tzinfo=None)

        monkeypatch.setattr("django_celery_beat.tzcrontab.datetime", MovedDatetime)
        monkeypatch.setattr("django_celery_beat.models.now", lambda: clock.now)
        monkeypatch.setattr(ModelEntry, "_default_now", lambda entry: clock.now)
        # The scheduler only loads the cron entries due within two hours of its own clock.
        monkeypatch.setattr("django_celery_beat.schedulers.aware_now", lambda: clock.now)
        monkeypatch.setattr("django_celery_beat.schedulers.now", lambda: clock.now)


@pytest.fixture
def moved_clock(monkeypatch):
    clock = MovedClock(dt.datetime(2026, 12, 2, 7, 0, tzinfo=dt.UTC))
    clock.install(monkeypatch)
    return clock


@pytest.fixture
def agent(org, builder):
    return published_agent(org, name="Reporter", created_by=builder)


def schedule_trigger(actor, org, agent, *, schedule=None, prompt="Write the daily report", **kw):
    trigger, _ = trigger_create(
        actor=actor,
        organization=org,
        agent=agent,
        kind="schedule",
        name="Daily report",
        prompt=prompt,
        schedule=schedule or {"cron": "0 9 * * *", "timezone": "Europe/Madrid"},
        **kw,
    )
    return trigger


def event_trigger(actor, org, agent, *, prompt="Triage this issue", **kw):
    return trigger_create(
        actor=actor,
        organization=org,
        agent=agent,
        kind="event",
        name="GitHub issues",
        prompt=prompt,
        **kw,
    )


__all__ = ["Role", "event_trigger", "schedule_trigger"]
