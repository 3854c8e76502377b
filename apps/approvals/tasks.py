"""Celery tasks of the approvals app: the two expiry sweeps. (Resuming a decided run is the runs
app's: ``apps.runs.tasks.resume_run``.)"""

from __future__ import annotations

from celery import shared_task

from agenticos.schedule import single_flight

from . import services

SWEEP_LOCK_SECONDS = 30 * 60


@shared_task(name="apps.approvals.tasks.expire_stale_approvals", ignore_result=True)
def expire_stale_approvals() -> int:
    """Hourly: deny by time every call pending past APPROVAL_EXPIRY_HOURS (seed 003, "Una decisión
    que nadie toma"), then remind the approval audience of every call that expires within
    APPROVAL_EXPIRY_WARNING_HOURS (once per call)."""
    with single_flight("approvals.expire_stale_approvals", SWEEP_LOCK_SECONDS) as acquired:
        if not acquired:
            return 0
        expired = services.approvals_expire_stale()
        # The same hourly sweep reminds what is about to expire (APPROVAL_EXPIRY_WARNING_HOURS).
        services.approvals_remind_expiring()
        return expired


@shared_task(name="apps.approvals.tasks.expire_stale_questions", ignore_result=True)
def expire_stale_questions() -> int:
    """Hourly: cancel runs whose question went unanswered past QUESTION_EXPIRY_HOURS (seed 000)."""
    with single_flight("approvals.expire_stale_questions", SWEEP_LOCK_SECONDS) as acquired:
        if not acquired:
            return 0
        return services.questions_expire_stale()
