"""The suite talks to exactly the PostgreSQL and Redis the test runner chose.

Settings are evaluated once, at import; if anything evaluated them before the runner had put
the service URLs in the environment, the suite would quietly use whatever the empty environment
pointed at (a developer's `make run` server, or a socket where nothing listens). The runner
records the identity of the servers it started or was given; these tests compare it with the
servers the suite's own connections reach.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
import redis
from django.conf import settings
from django.db import connection

from agenticos.testrun import (
    SUITE_SERVICES_VARIABLE,
    TEST_ONLY_DURABILITY_SETTINGS,
    _in_parallel,
    _is_stale_template,
)


@pytest.fixture
def chosen_by_runner() -> dict:
    recorded = os.environ.get(SUITE_SERVICES_VARIABLE)
    assert recorded, (
        f"{SUITE_SERVICES_VARIABLE} is unset: run the suite through `make test` or "
        "`agenticos test`, which decide the services before Django's settings are read"
    )
    return json.loads(recorded)


@pytest.mark.django_db
def test_database_is_the_server_the_runner_chose(chosen_by_runner):
    with connection.cursor() as cursor:
        cursor.execute("SELECT system_identifier, current_database() FROM pg_control_system()")
        system_identifier, database = cursor.fetchone()
    assert str(system_identifier) == chosen_by_runner["postgres_system_identifier"]
    # The suite works in its own per-process test database beside the runner's database.
    assert database == settings.DATABASES["default"]["TEST"]["NAME"]
    assert database.startswith(f"test_{chosen_by_runner['postgres_database']}_")


def test_redis_is_the_server_the_runner_chose(chosen_by_runner):
    client = redis.Redis.from_url(settings.REDIS_URL)
    try:
        assert client.info("server")["run_id"] == chosen_by_runner["redis_run_id"]
    finally:
        client.close()


def test_reading_the_environment_readers_does_not_evaluate_settings():
    # The launcher and the runner import the readers before the services are decided.
    probe = (
        "import sys, agenticos.settings.env, agenticos.testrun, agenticos.launcher;"
        "print(sorted(m for m in sys.modules if m.startswith('agenticos.settings')))"
    )
    environment = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    loaded = subprocess.run(
        [sys.executable, "-c", probe], env=environment, capture_output=True, text=True, check=True
    ).stdout.strip()
    assert loaded == "['agenticos.settings', 'agenticos.settings.env']"


@pytest.mark.django_db
def test_the_embedded_test_database_does_not_flush_at_commit():
    embedded_pg = str(Path(os.environ["AGENTICOS_DATA_DIR"]) / "pg")
    if embedded_pg not in unquote(os.environ["DATABASE_URL"]):
        pytest.skip("DATABASE_URL names a server of its own: the runner leaves it as it is")
    with connection.cursor() as cursor:
        settings_of_server = {}
        for name in TEST_ONLY_DURABILITY_SETTINGS:
            cursor.execute(f"SHOW {name}")
            settings_of_server[name] = cursor.fetchone()[0]
    assert settings_of_server == dict.fromkeys(TEST_ONLY_DURABILITY_SETTINGS, "off")


def test_each_xdist_worker_has_a_redis_database_and_channel_prefix_of_its_own():
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    database = urlsplit(settings.REDIS_URL).path.lstrip("/")
    if worker:
        assert database == str(int(worker.removeprefix("gw")) + 1)
        assert settings.CELERY_BROKER_URL == settings.CACHES["default"]["LOCATION"]
        assert settings.CELERY_BROKER_URL == settings.REDIS_URL
    else:
        assert database in {"", "0"}
    layer = settings.CHANNEL_LAYERS["default"]["CONFIG"]
    assert layer["hosts"] == [settings.REDIS_URL] and str(os.getpid()) in layer["prefix"]


@pytest.mark.parametrize(
    ("arguments", "parallel"),
    [
        (["tests/orgs"], True),
        (["-n", "0", "tests/orgs"], False),
        (["-n3"], False),
        (["--numprocesses=1"], False),
        (["-p", "no:xdist"], False),
        (["-q", "-p", "no:cacheprovider"], True),
    ],
)
def test_the_runner_adds_workers_unless_the_caller_chose(monkeypatch, arguments, parallel):
    monkeypatch.setenv("AGENTICOS_TEST_WORKERS", "2")
    expected = ["-n", "2", *arguments] if parallel else arguments
    assert _in_parallel(arguments) == expected


def test_no_workers_asked_runs_in_one_process(monkeypatch):
    monkeypatch.setenv("AGENTICOS_TEST_WORKERS", "0")
    assert _in_parallel(["tests"]) == ["tests"]


def test_a_template_build_in_progress_is_never_taken_for_stale():
    prefix = "agenticos_test_template_0123456789abcdef"
    assert _is_stale_template(prefix)  # a complete template of other migrations
    assert not _is_stale_template(f"{prefix}_building_{os.getpid()}")  # a live build
    assert _is_stale_template(f"{prefix}_building_{2**22 + 1}")  # above pid_max: long gone
