"""`agenticos test` (and `make test`): pytest against real PostgreSQL and Redis.

The services named by DATABASE_URL / REDIS_URL are used when set; otherwise embedded ones are
started under <data dir>/test and stopped afterwards.
"""

from __future__ import annotations

import os
from pathlib import Path

NO_TESTS_COLLECTED = 5


def run_tests(pytest_args: list[str]) -> int:
    from agenticos.settings.env import env_path

    from .embedded import ensure_services

    base_dir = Path(__file__).resolve().parent.parent
    data_dir = env_path("AGENTICOS_DATA_DIR", base_dir / ".agenticos") / "test"
    data_dir.mkdir(parents=True, exist_ok=True)
    services = ensure_services(data_dir, os.environ)
    # The suite's own secrets and checkpoints live apart from a developer's `make run` data.
    os.environ["AGENTICOS_DATA_DIR"] = str(data_dir)
    # Importing this package set the default settings module for Celery; the suite has its own.
    os.environ["DJANGO_SETTINGS_MODULE"] = "agenticos.settings.test"
    try:
        import pytest

        code = pytest.main(pytest_args)
    finally:
        services.stop()
    if code == NO_TESTS_COLLECTED:
        print("agenticos test: pytest collected no tests — that is a failure, not a pass.")
        return 1
    return int(code)
