"""Every periodic job in one place. `sync_schedule()` (run by `agenticos up`, `bootstrap` and
the docker entrypoint) writes them into django-celery-beat, where the admin shows them.

Each job has `expires` shorter than its period, so a backlog never runs a stale sweep, and each
task takes `single_flight` so two beats cannot run the same sweep at once.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass

import redis
from django.conf import settings


@dataclass(frozen=True)
class PeriodicJob:
    name: str
    task: str
    every_seconds: int
    description: str

    @property
    def expires_seconds(self) -> int:
        return max(1, self.every_seconds // 2)


HOUR = 3600
SCHEDULE: tuple[PeriodicJob, ...] = (
    PeriodicJob(
        name="audit: write signed checkpoints",
        task="apps.audit.tasks.write_audit_checkpoints",
        every_seconds=HOUR,
        description="Writes each audit chain's signed head outside the database (docs/audit.md).",
    ),
    PeriodicJob(
        name="runs: reap stale runs",
        task="apps.runs.tasks.reap_stale_runs",
        every_seconds=HOUR,
        description="Fails runs left queued or running past STALE_RUN_REAPED_AFTER_HOURS (docs/runner.md).",
    ),
    PeriodicJob(
        name="runs: sweep lapsed leases",
        task="apps.runs.tasks.sweep_lapsed_leases",
        every_seconds=15,
        description="Fails running runs whose worker stopped renewing their lease (docs/runner.md).",
    ),
    PeriodicJob(
        name="runs: requeue undelivered runs",
        task="apps.runs.tasks.requeue_queued_runs",
        every_seconds=15,
        description="Re-sends the task of runs still queued past RUN_REQUEUE_AFTER_SECONDS; fails them after RUN_REQUEUE_LIMIT re-sends (docs/runner.md).",
    ),
    PeriodicJob(
        name="knowledge: sweep lapsed indexing leases",
        task="apps.knowledge.tasks.sweep_indexing_leases",
        every_seconds=60,
        description="Requeues (or, after three tries, fails) documents whose indexing worker stopped, and starts queued ones (docs/knowledge.md).",
    ),
    PeriodicJob(
        name="approvals: expire stale approvals",
        task="apps.approvals.tasks.expire_stale_approvals",
        every_seconds=HOUR,
        description="Expires calls pending past APPROVAL_EXPIRY_HOURS and cancels their runs (docs/approvals.md).",
    ),
    PeriodicJob(
        name="approvals: expire unanswered questions",
        task="apps.approvals.tasks.expire_stale_questions",
        every_seconds=HOUR,
        description="Cancels runs whose question went unanswered past QUESTION_EXPIRY_HOURS (docs/approvals.md).",
    ),
    PeriodicJob(
        name="notifications: usage reports",
        task="apps.notifications.tasks.send_usage_reports",
        every_seconds=HOUR,
        description="Sends the weekly (Mondays) and monthly (the 1st) usage reports agents ask for; once per period.",
    ),
)

# Marks the PeriodicTask rows this file owns (rows an operator adds in the admin are left alone).
MANAGED_MARK = "[agenticos] "


def sync_schedule() -> None:
    """Create or update a PeriodicTask per job; disable ones this file no longer declares."""
    from django_celery_beat.models import IntervalSchedule, PeriodicTask

    declared = set()
    for job in SCHEDULE:
        interval, _ = IntervalSchedule.objects.get_or_create(
            every=job.every_seconds, period=IntervalSchedule.SECONDS
        )
        PeriodicTask.objects.update_or_create(
            name=job.name,
            defaults={
                "task": job.task,
                "interval": interval,
                "expire_seconds": job.expires_seconds,
                "description": MANAGED_MARK + job.description,
                "enabled": True,
            },
        )
        declared.add(job.name)
    # Jobs this file once declared but no longer does stop running.
    PeriodicTask.objects.filter(description__startswith=MANAGED_MARK).exclude(
        name__in=declared
    ).update(enabled=False)


@contextmanager
def single_flight(name: str, ttl_seconds: int):
    """Yield True to the one caller that holds `name` for up to `ttl_seconds`, False to others."""
    client = redis.Redis.from_url(settings.REDIS_URL)
    key = f"agenticos:single-flight:{name}"
    acquired = bool(client.set(key, "1", nx=True, ex=ttl_seconds))
    try:
        yield acquired
    finally:
        if acquired:
            client.delete(key)
