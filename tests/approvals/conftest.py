"""Fixtures of the approvals tests: gated agents, parked runs, the real Celery worker."""

from __future__ import annotations

import pytest

from tests.runs.conftest import celery_worker, wait_for  # noqa: F401  (fixtures)
from tests.runs.toolsets import echo_toolset  # noqa: F401  (fixture)


@pytest.fixture
def resume_over_api(django_capture_on_commit_callbacks):
    """``POST runs/{id}/resume/`` as a client sends it, then the continuation it enqueued on
    commit, executed here by Celery in eager mode: the worker's own task body, in this process."""
    from agenticos.celery import app

    eager = app.conf.task_always_eager

    def resume(client, run_id: int):
        with django_capture_on_commit_callbacks(execute=True):
            return client.post(f"/api/v1/runs/{run_id}/resume/")

    app.conf.task_always_eager = True
    yield resume
    app.conf.task_always_eager = eager
