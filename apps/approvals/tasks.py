"""Celery tasks of the approvals app: ids in, reload, call a service."""

from __future__ import annotations

import logging

from celery import shared_task

from agenticos.schedule import single_flight

from . import services

logger = logging.getLogger(__name__)

SWEEP_LOCK_SECONDS = 30 * 60


# No automatic retry: a continuation that failed has booked its outcome and spend. A resume the
# spec refuses leaves the run parked and resumable (POST runs/{id}/resume/ tries again).
@shared_task(name="apps.approvals.tasks.resume_run", acks_late=True, ignore_result=True)
def resume_run_task(run_id: int) -> str | None:
    try:
        return services.run_resume(run_id=run_id)
    except (services.ResumeRefused, services.AlreadyDecided) as exc:
        logger.info("run %s not resumed: %s", run_id, exc)
        return None


@shared_task(name="apps.approvals.tasks.expire_stale_approvals", ignore_result=True)
def expire_stale_approvals() -> int:
    """Hourly: deny by time every call pending past APPROVAL_EXPIRY_HOURS (seed 003, "Una decisión que nadie toma")."""
    with single_flight("approvals.expire_stale_approvals", SWEEP_LOCK_SECONDS) as acquired:
        if not acquired:
            return 0
        return services.approvals_expire_stale()


@shared_task(name="apps.approvals.tasks.expire_stale_questions", ignore_result=True)
def expire_stale_questions() -> int:
    """Hourly: cancel runs whose question went unanswered past QUESTION_EXPIRY_HOURS (seed 000)."""
    with single_flight("approvals.expire_stale_questions", SWEEP_LOCK_SECONDS) as acquired:
        if not acquired:
            return 0
        return services.questions_expire_stale()
