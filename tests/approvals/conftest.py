"""Fixtures of the approvals tests: gated agents, parked runs, the real Celery worker."""

from __future__ import annotations

from tests.runs.conftest import celery_worker, wait_for  # noqa: F401  (fixtures)
from tests.runs.toolsets import echo_toolset  # noqa: F401  (fixture)
