"""A real Celery worker (in a thread of this process) on its own queue, for end-to-end runs."""

from __future__ import annotations

import threading
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


_drained: dict[str, threading.Event] = {}


# Registered at import, before any worker starts (a worker knows the tasks it started with).
@celery_app.task(name="tests.runs.drained", ignore_result=True)
def _drained_marker(key: str) -> None:
    _drained.pop(key).set()


def worker_drained(timeout: float = 30.0) -> None:
    """Until the `celery_worker` has finished every task enqueued before this call: it takes its
    queue's messages one at a time, in order, so a marker sent now runs after all of them. The
    event that proves "nothing more will come" where a pause would only hope so."""
    key = uuid.uuid4().hex
    done = _drained[key] = threading.Event()
    _drained_marker.delay(key)
    assert done.wait(timeout), f"the worker did not reach the marker within {timeout} s"


def wait_for(run_id: int, statuses=TERMINAL_STATUSES, timeout: float = 30.0) -> Run:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run = Run.objects.get(pk=run_id)
        if run.status in statuses:
            return run
        time.sleep(0.05)
    raise AssertionError(f"run {run_id} still {Run.objects.get(pk=run_id).status} after {timeout}s")


from .toolsets import echo_toolset, slow_ping  # noqa: E402,F401  (fixtures)
