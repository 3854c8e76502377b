"""A real Celery worker (in a thread of this process) on its own queue, for end-to-end runs."""

from __future__ import annotations

import time
import uuid

import pytest
from celery.contrib.testing.worker import start_worker

from agenticos.celery import app as celery_app
from apps.runs.choices import TERMINAL_STATUSES
from apps.runs.models import Run


@pytest.fixture
def celery_worker(transactional_db, settings):
    # Its own queue: another engineer's worker on the same Redis never takes these tasks.
    queue = f"agenticos-test-{uuid.uuid4().hex[:8]}"
    celery_app.conf.task_default_queue = queue
    try:
        with start_worker(
            celery_app,
            pool="solo",
            perform_ping_check=False,
            queues=[queue],
            shutdown_timeout=30,
            loglevel="WARNING",
        ) as worker:
            yield worker
    finally:
        celery_app.conf.task_default_queue = "celery"


def wait_for(run_id: int, statuses=TERMINAL_STATUSES, timeout: float = 30.0) -> Run:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run = Run.objects.get(pk=run_id)
        if run.status in statuses:
            return run
        time.sleep(0.05)
    raise AssertionError(f"run {run_id} still {Run.objects.get(pk=run_id).status} after {timeout}s")


from .toolsets import echo_toolset, slow_ping  # noqa: E402,F401  (fixtures)
