"""Celery tasks of the runs app: ids in, reload, call the runner or a service."""

from __future__ import annotations

from celery import shared_task

from agenticos.schedule import single_flight

from . import runner, services

REAPER_LOCK_SECONDS = 30 * 60


# No automatic retry: a run that failed has booked its outcome and spend; retrying would be a
# second bill nobody asked for. acks_late + the claim make a redelivered message a no-op.
@shared_task(name="apps.runs.tasks.execute_run", acks_late=True, ignore_result=True)
def execute_run_task(run_id: int) -> str | None:
    return runner.execute_run(run_id)


@shared_task(name="apps.runs.tasks.reap_stale_runs", ignore_result=True)
def reap_stale_runs() -> int:
    """Hourly: end runs a dead worker left queued or running (seed 003, "Un run cuyo proceso murió")."""
    with single_flight("runs.reap_stale_runs", REAPER_LOCK_SECONDS) as acquired:
        if not acquired:
            return 0
        return services.runs_reap_stale()
