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

import contextlib
import hashlib
import json
import logging
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import cast

from agenticos.settings.env import env_bool, env_int, env_path

from .embedded import ensure_services, server_identity

NO_TESTS_COLLECTED = 5
SUITE_SERVICES_VARIABLE = "AGENTICOS_SUITE_SERVICES"
# The migrated database every test database is copied from (agenticos/settings/test.py).
TEMPLATE_VARIABLE = "AGENTICOS_TEST_TEMPLATE"
TEMPLATE_PREFIX = "agenticos_test_template_"
TEST_ONLY_DURABILITY_SETTINGS = ("fsync", "synchronous_commit", "full_page_writes")


def run_tests(pytest_args: list[str]) -> int:
    base_dir = Path(__file__).resolve().parent.parent
    data_dir = env_path("AGENTICOS_DATA_DIR", base_dir / ".agenticos") / "test"
    data_dir.mkdir(parents=True, exist_ok=True)
    embedded_postgres = not os.environ.get("DATABASE_URL")
    # The URLs go into the real environment, which pytest's workers and their children inherit
    # (ensure_services is annotated for a plain dict).
    services = ensure_services(data_dir, cast(dict, os.environ))
    assert services.database_url and services.redis_url
    try:
        if embedded_postgres:
            _tune_for_tests(
                services.database_url, durable=env_bool("AGENTICOS_TEST_DURABLE_DATABASE", False)
            )
        os.environ[TEMPLATE_VARIABLE] = migrated_template(services.database_url, base_dir)
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


def _tune_for_tests(database_url: str, *, durable: bool) -> None:
    """The embedded test cluster's data is thrown away: a crash may lose it, so nothing is flushed
    to disk at commit. Each of these saves a disk flush per commit, and the suite commits
    constantly (every transactional test resets the database). Settings of this cluster only
    (its postgresql.auto.conf under <data dir>/test/pg), never of a server DATABASE_URL names.

    `durable` (AGENTICOS_TEST_DURABLE_DATABASE=1, which `make bench` sets) puts PostgreSQL's
    defaults back: the benchmarks' latencies are to be those of a server that flushes."""
    import psycopg

    with psycopg.connect(database_url, autocommit=True) as conn:
        for name in TEST_ONLY_DURABILITY_SETTINGS:
            conn.execute(
                f"ALTER SYSTEM RESET {name}" if durable else f"ALTER SYSTEM SET {name} = off"
            )
        conn.execute("SELECT pg_reload_conf()")


def migrations_digest(base_dir: Path) -> str:
    """What a migrated database depends on: our migrations and the pinned packages (whose own
    migrations come with them)."""
    digest = hashlib.sha256()
    paths = sorted(base_dir.glob("apps/*/migrations/*.py")) + sorted(
        (base_dir / "requirements").glob("*.txt")
    )
    for path in paths:
        digest.update(str(path.relative_to(base_dir)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def migrated_template(database_url: str, base_dir: Path) -> str:
    """A database with every migration applied, built once per set of migrations and kept on the
    server: each xdist worker's test database is a copy of it (CREATE DATABASE ... TEMPLATE, a
    file copy taking a second) instead of running 60-odd migrations itself (a minute and more on a
    loaded machine, per worker and per run). Built under a temporary name and renamed when
    complete, so an interrupted build is never used; templates of older migrations are dropped."""
    import psycopg
    from psycopg import sql

    from agenticos.settings.env import database_url_of, parse_database_url

    name = f"{TEMPLATE_PREFIX}{migrations_digest(base_dir)}"
    with psycopg.connect(database_url, autocommit=True) as conn:
        existing = [
            row[0]
            for row in conn.execute(
                "SELECT datname FROM pg_database WHERE datname LIKE %s", [TEMPLATE_PREFIX + "%"]
            )
        ]
        if name in existing:
            return name
        for stale in existing:
            if not _is_stale_template(stale):
                continue
            # Another suite on this server may be copying it right now: then it stays for now.
            with contextlib.suppress(psycopg.errors.ObjectInUse):
                conn.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(stale)))
        building = f"{name}_building_{os.getpid()}"
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(building)))
    target = parse_database_url(database_url)
    target["NAME"] = building
    subprocess.run(
        [sys.executable, str(base_dir / "manage.py"), "migrate", "--noinput", "-v", "0"],
        env={
            **os.environ,
            "DATABASE_URL": database_url_of(target),
            "DJANGO_SETTINGS_MODULE": "agenticos.settings.test",
        },
        check=True,
    )
    with psycopg.connect(database_url, autocommit=True) as conn:
        renamed = sql.SQL("ALTER DATABASE {} RENAME TO {}").format(
            sql.Identifier(building), sql.Identifier(name)
        )
        for _ in range(100):  # the migrate process's sessions may take a moment to go
            try:
                conn.execute(renamed)
                break
            except psycopg.errors.DuplicateDatabase:
                # A suite started beside this one built the same template first.
                conn.execute(sql.SQL("DROP DATABASE {}").format(sql.Identifier(building)))
                break
            except psycopg.errors.ObjectInUse:
                time.sleep(0.05)
        else:
            raise RuntimeError(f"the template {building} stayed in use after its migrations")
    return name


def _is_stale_template(database: str) -> bool:
    """A template of other migrations, or a build whose process is gone. A build in progress (a
    suite started beside this one, its process alive) is never touched."""
    _, building, pid = database.partition("_building_")
    if not building:
        return True
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except (ValueError, PermissionError):
        return False
    return False


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
