"""What the runs app puts on the broker, by task name.

A service that starts a run and the Celery task that executes it must not import each other
(the task calls the service's claim and finish; the service enqueues the task on commit): the
service sends the message by the task's registered name, and ``apps/runs/tasks.py`` declares its
tasks under these same names. ``current_app.tasks[name]`` is Celery's registry (every app's
``tasks.py`` is autodiscovered), so ``delay`` keeps the task's own options and eager mode.
"""

from __future__ import annotations

from celery import current_app

EXECUTE_RUN = "apps.runs.tasks.execute_run"
RESUME_RUN = "apps.runs.tasks.resume_run"


def enqueue(task_name: str, run_id: int) -> None:
    """Send ``task_name`` for run ``run_id`` (call it from ``transaction.on_commit``)."""
    current_app.tasks[task_name].delay(run_id)
