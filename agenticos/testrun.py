"""`agenticos test` (and `make test`): pytest against real PostgreSQL and Redis.

The services named by DATABASE_URL / REDIS_URL are used when set; otherwise embedded ones are
started under <data dir>/test and stopped afterwards.

Order matters here: the services are decided (and their URLs put in the environment) before
anything evaluates Django's settings, which read DATABASES and REDIS_URL once, at import. The
runner then records the identity of the servers it chose in SUITE_SERVICES_VARIABLE, so the suite
can prove it talks to exactly those (tests/test_suite_services.py) and never to, say, a
developer's `make run` server that happens to be up.

The suite runs in parallel (pytest-xdist, docs/testing.md): the services are started here once,
before pytest starts its workers, and every worker inherits their URLs; agenticos/settings/test.py
gives each worker its own test database and Redis database.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path

from agenticos.settings.env import env_int, env_path

from .embedded import ensure_services, server_identity

NO_TESTS_COLLECTED = 5
SUITE_SERVICES_VARIABLE = "AGENTICOS_SUITE_SERVICES"


def run_tests(pytest_args: list[str]) -> int:
    base_dir = Path(__file__).resolve().parent.parent
    data_dir = env_path("AGENTICOS_DATA_DIR", base_dir / ".agenticos") / "test"
    data_dir.mkdir(parents=True, exist_ok=True)
    embedded_postgres = not os.environ.get("DATABASE_URL")
    services = ensure_services(data_dir, os.environ)
    try:
        if embedded_postgres:
            _tune_for_tests(services.database_url)
        os.environ[SUITE_SERVICES_VARIABLE] = json.dumps(
            server_identity(services.database_url, services.redis_url)
        )
        # The suite's own secrets and checkpoints live apart from a developer's `make run` data.
        os.environ["AGENTICOS_DATA_DIR"] = str(data_dir)
        # Importing this package set the default settings module for Celery; the suite has its own.
        os.environ["DJANGO_SETTINGS_MODULE"] = "agenticos.settings.test"
        import pytest

        code = pytest.main(_in_parallel(pytest_args))
    finally:
        try:
            _log_to_the_real_stderr()
        finally:
            services.stop()
    if code == NO_TESTS_COLLECTED:
        print("agenticos test: pytest collected no tests — that is a failure, not a pass.")
        return 1
    return int(code)


def _tune_for_tests(database_url: str) -> None:
    """The embedded test cluster is thrown away with its data: a crash may lose it, so nothing is
    flushed to disk at commit. Each of these saves a disk flush per commit, and the suite commits
    constantly (every transactional test resets the database). Settings of this cluster only
    (its postgresql.auto.conf under <data dir>/test/pg), never of a server DATABASE_URL names."""
    import psycopg

    with psycopg.connect(database_url, autocommit=True) as conn:
        for name in ("fsync", "synchronous_commit", "full_page_writes"):
            conn.execute(f"ALTER SYSTEM SET {name} = off")
        conn.execute("SELECT pg_reload_conf()")


def test_workers() -> int:
    """How many xdist workers `agenticos test` starts: AGENTICOS_TEST_WORKERS, else one per core
    up to four (each worker holds a PostgreSQL test database, a Chromium for the browser tests and
    a Celery worker for the live tests; more than four buys little on a developer's machine). 0 runs
    the suite in this one process."""
    return env_int("AGENTICOS_TEST_WORKERS", min(os.cpu_count() or 1, 4), minimum=0)


def _in_parallel(pytest_args: list[str]) -> list[str]:
    """`-n N` unless the caller chose (`-n 0` runs serially: `make bench` and `make fuzz` do, their
    timings and their one server are not to be shared)."""
    chose = any(
        arg in {"-n", "--numprocesses", "-pno:xdist"}
        or arg.startswith(("-n=", "--numprocesses=", "--dist"))
        or (arg.startswith("-n") and arg[2:].isdigit())
        for arg in pytest_args
    ) or any(
        first == "-p" and second == "no:xdist"
        for first, second in zip(pytest_args, pytest_args[1:], strict=False)
    )
    workers = test_workers()
    if chose or workers <= 1:
        return pytest_args
    return ["-n", str(workers), *pytest_args]


def _log_to_the_real_stderr() -> None:
    """Django configured logging inside pytest, on the stderr pytest captured and has closed by
    now; what is logged while the services stop goes to the terminal instead."""
    for handler in logging.getLogger().handlers:
        if isinstance(handler, logging.StreamHandler):
            # Assigned, not setStream(): that flushes the closed stream first and raises.
            handler.stream = sys.__stderr__
