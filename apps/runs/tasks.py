"""Celery tasks of the runs app: ids in, reload, call the runner or a service."""

from __future__ import annotations

import logging

from celery import shared_task

from agenticos.schedule import single_flight

from . import queue, requeue, resume, runner, services
from .runtime import worker_host

logger = logging.getLogger(__name__)

REAPER_LOCK_SECONDS = 30 * 60
LEASE_SWEEP_LOCK_SECONDS = 60
REQUEUE_LOCK_SECONDS = 60
# A run that could not even be claimed (the database refused a connection) is tried again, with
# growing waits up to this long each, for about an hour before the task gives up; nothing ran.
CLAIM_RETRY_BACKOFF_MAX_SECONDS = 60
CLAIM_MAX_RETRIES = 60


# Retried only when the claim itself failed: a run that failed after its claim has booked its
# outcome and spend, and retrying would be a second bill nobody asked for. acks_late + the claim
# make a redelivered message a no-op, so a run is never executed twice.
@shared_task(
    name=queue.EXECUTE_RUN,
    acks_late=True,
    ignore_result=True,
    autoretry_for=(runner.RunClaimUnavailable,),
    retry_backoff=1,
    retry_backoff_max=CLAIM_RETRY_BACKOFF_MAX_SECONDS,
    retry_jitter=True,
    max_retries=CLAIM_MAX_RETRIES,
)
def execute_run_task(run_id: int) -> str | None:
    # This pool thread hands the run to the process's event loop and waits for it there, beside
    # the other runs the worker holds (apps/runs/runtime.py).
    host = worker_host()
    return host.run(runner.execute_run_async(run_id, host=host))


# No automatic retry: a continuation that failed has booked its outcome and spend. A resume the
# spec refuses leaves the run parked and resumable (POST runs/{id}/resume/ tries again).
@shared_task(name=queue.RESUME_RUN, acks_late=True, ignore_result=True)
def resume_run_task(run_id: int) -> str | None:
    try:
        return resume.run_resume(run_id=run_id)
    except resume.ResumeRefused as exc:
        logger.info("run %s not resumed: %s", run_id, exc)
        return None


@shared_task(name="apps.runs.tasks.reap_stale_runs", ignore_result=True)
def reap_stale_runs() -> int:
    """Hourly: end runs a dead worker left queued or running (seed 003, "Un run cuyo proceso murió")."""
    with single_flight("runs.reap_stale_runs", REAPER_LOCK_SECONDS) as acquired:
        if not acquired:
            return 0
        return services.runs_reap_stale()


@shared_task(name="apps.runs.tasks.sweep_lapsed_leases", ignore_result=True)
def sweep_lapsed_leases() -> int:
    """Every 15 s: fail the running runs whose worker stopped renewing their lease."""
    with single_flight("runs.sweep_lapsed_leases", LEASE_SWEEP_LOCK_SECONDS) as acquired:
        if not acquired:
            return 0
        return services.runs_sweep_lapsed_leases()


@shared_task(name="apps.runs.tasks.requeue_queued_runs", ignore_result=True)
def requeue_queued_runs() -> int:
    """Every 15 s: re-send the task of runs still queued past RUN_REQUEUE_AFTER_SECONDS."""
    with single_flight("runs.requeue_queued_runs", REQUEUE_LOCK_SECONDS) as acquired:
        if not acquired:
            return 0
        return requeue.runs_requeue()
