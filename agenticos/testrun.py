"""`agenticos test` (and `make test`): pytest against real PostgreSQL and Redis.

The services named by DATABASE_URL / REDIS_URL are used when set; otherwise embedded ones are
started under <data dir>/test and stopped afterwards.

Order matters here: the services are decided (and their URLs put in the environment) before
anything evaluates Django's settings, which read DATABASES and REDIS_URL once, at import. The
runner then records the identity of the servers it chose in SUITE_SERVICES_VARIABLE, so the suite
can prove it talks to exactly those (tests/test_suite_services.py) and never to, say, a
developer's `make run` server that happens to be up.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path

from agenticos.settings.env import env_path

from .embedded import ensure_services, server_identity

NO_TESTS_COLLECTED = 5
SUITE_SERVICES_VARIABLE = "AGENTICOS_SUITE_SERVICES"


def run_tests(pytest_args: list[str]) -> int:
    base_dir = Path(__file__).resolve().parent.parent
    data_dir = env_path("AGENTICOS_DATA_DIR", base_dir / ".agenticos") / "test"
    data_dir.mkdir(parents=True, exist_ok=True)
    services = ensure_services(data_dir, os.environ)
    try:
        os.environ[SUITE_SERVICES_VARIABLE] = json.dumps(
            server_identity(services.database_url, services.redis_url)
        )
        # The suite's own secrets and checkpoints live apart from a developer's `make run` data.
        os.environ["AGENTICOS_DATA_DIR"] = str(data_dir)
        # Importing this package set the default settings module for Celery; the suite has its own.
        os.environ["DJANGO_SETTINGS_MODULE"] = "agenticos.settings.test"
        import pytest

        code = pytest.main(pytest_args)
    finally:
        try:
            _log_to_the_real_stderr()
        finally:
            services.stop()
    if code == NO_TESTS_COLLECTED:
        print("agenticos test: pytest collected no tests — that is a failure, not a pass.")
        return 1
    return int(code)


def _log_to_the_real_stderr() -> None:
    """Django configured logging inside pytest, on the stderr pytest captured and has closed by
    now; what is logged while the services stop goes to the terminal instead."""
    for handler in logging.getLogger().handlers:
        if isinstance(handler, logging.StreamHandler):
            # Assigned, not setStream(): that flushes the closed stream first and raises.
            handler.stream = sys.__stderr__
