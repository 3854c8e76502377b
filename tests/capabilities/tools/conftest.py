"""Fixtures the tool tests share: the harmless echo toolset, the large-result one, and the
Celery worker of the end-to-end runs."""

from tests.runs.conftest import celery_worker  # noqa: F401  (fixture)
from tests.runs.toolsets import echo_toolset  # noqa: F401  (fixture)

from .big_toolset import big_toolset  # noqa: F401  (fixture)
