"""The real launcher: `agenticos up` brings up web + worker + beat, /healthz reports all three
healthy, and Ctrl-C (SIGINT) stops every process it started."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psutil
import psycopg
import pytest
from django.conf import settings

pytestmark = [pytest.mark.launcher, pytest.mark.timeout(240)]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _healthz(port: int) -> dict | None:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as response:
            return json.loads(response.read())
    except urllib.error.HTTPError as error:  # 503 still carries the body
        return json.loads(error.read())
    except OSError:
        return None


def _start(env: dict, port: int) -> tuple[subprocess.Popen, dict]:
    process = subprocess.Popen(
        [sys.executable, "-m", "agenticos.cli", "up"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    deadline = time.monotonic() + 150
    state = None
    while time.monotonic() < deadline:
        state = _healthz(port)
        if state == {"db": "ok", "redis": "ok", "worker": "ok"}:
            return process, state
        if process.poll() is not None:
            break
        time.sleep(0.5)
    process.kill()
    output = process.stdout.read() if process.stdout else ""
    raise AssertionError(
        f"launcher never became healthy (last /healthz: {state}):\n{output[-4000:]}"
    )


def _stop(process: subprocess.Popen) -> tuple[int, str, list[psutil.Process]]:
    children = psutil.Process(process.pid).children(recursive=True)
    process.send_signal(signal.SIGINT)
    try:
        output, _ = process.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()
        raise
    gone, alive = psutil.wait_procs(children, timeout=10)
    return process.returncode, output, alive


@pytest.fixture
def data_root():
    """A directory of the test's own outside pytest's basetemp (another pytest session on the
    machine may prune basetemp while the launcher's PostgreSQL still writes there); short, so the
    embedded server's socket path stays within the OS limit."""
    path = Path(tempfile.mkdtemp(prefix="aos-up-"))
    path.chmod(0o755)  # the embedded PostgreSQL runs as its own system user when root starts it
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _base_env(data_root, port: int) -> dict:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in {"DATABASE_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE"}
    }
    env.update(
        {
            "AGENTICOS_DATA_DIR": str(data_root / "data"),
            "PORT": str(port),
            "AGENTICOS_ADMIN_EMAIL": "first@owner.test",
            "AGENTICOS_ADMIN_PASSWORD": "first-owner-pass",
            "AGENTICOS_WORKER_CONCURRENCY": "1",
        }
    )
    return env


@pytest.fixture
def launcher_database():
    """A database of its own on the suite's PostgreSQL server, dropped afterwards."""
    parts = urlsplit(settings.DATABASE_URL)
    name = f"agenticos_launcher_test_{os.getpid()}"
    admin_url = urlunsplit(parts._replace(path="/postgres"))
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    yield urlunsplit(parts._replace(path=f"/{name}"))
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def test_launcher_on_given_services(data_root, launcher_database):
    port = _free_port()
    redis_parts = urlsplit(settings.REDIS_URL)
    env = _base_env(data_root, port)
    env["DATABASE_URL"] = launcher_database
    env["REDIS_URL"] = urlunsplit(
        redis_parts._replace(path="/9")
    )  # apart from the suite's own keys
    process, _ = _start(env, port)
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/login/", timeout=5) as page:
        assert page.status == 200 and b"Log in to AgenticOS" in page.read()
    code, output, alive = _stop(process)
    assert code == 0, output[-3000:]
    assert "Console:  http://127.0.0.1:" in output and "first@owner.test" in output
    assert "AgenticOS: stopped." in output
    assert alive == []
    assert _healthz(port) is None  # nothing listens any more


def test_launcher_on_embedded_services_reuses_its_data(data_root):
    """A fresh machine: no DATABASE_URL/REDIS_URL, so PostgreSQL and Redis come from the wheels;
    a second start finds the first start's data (the same owner, no new password)."""
    port = _free_port()
    env = _base_env(data_root, port)
    env.pop("AGENTICOS_ADMIN_PASSWORD")
    process, _ = _start(env, port)
    recorded = json.loads((data_root / "data" / "services.json").read_text())
    assert recorded["database_url"].startswith("postgresql://") and recorded[
        "redis_url"
    ].startswith("redis://127.0.0.1:")
    # Another terminal, with no environment, builds links to the console that is running.
    other_terminal = subprocess.run(
        [
            sys.executable,
            "-c",
            "import django; django.setup(); from django.conf import settings;"
            "print(settings.AGENTICOS_PUBLIC_URL)",
        ],
        env={**env, "DJANGO_SETTINGS_MODULE": "agenticos.settings.base"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert other_terminal.stdout.strip() == f"http://127.0.0.1:{port}", other_terminal.stderr
    code, first_output, alive = _stop(process)
    assert code == 0 and alive == []
    assert "(generated now; shown this once)" in first_output
    assert not (data_root / "data" / "services.json").exists()

    process, _ = _start(env, port)
    code, second_output, alive = _stop(process)
    assert code == 0 and alive == []
    assert "first@owner.test / the password printed on the first start" in second_output


def test_links_follow_the_port_the_console_is_served_on_unless_a_public_url_is_set():
    from agenticos.launcher import derive_public_url

    unset = {"PORT": "8042"}
    derive_public_url(unset, 8042)
    assert unset["AGENTICOS_PUBLIC_URL"] == "http://127.0.0.1:8042"
    empty = {"AGENTICOS_PUBLIC_URL": ""}
    derive_public_url(empty, 9000)
    assert empty["AGENTICOS_PUBLIC_URL"] == "http://127.0.0.1:9000"
    given = {"AGENTICOS_PUBLIC_URL": "https://agents.example.com"}
    derive_public_url(given, 9000)
    assert given["AGENTICOS_PUBLIC_URL"] == "https://agents.example.com"
