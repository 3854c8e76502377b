"""Faults against the real launcher: one dead process is not an outage.

One `agenticos up` on its embedded PostgreSQL and Redis serves the whole module. Each fault is
done as an unlucky operator would (kill -9 of a child, Redis killed, PostgreSQL crashed) and the
product must come back on its own: the process restarted, the others untouched, every run that
was in flight finished, the API answering 503 with Retry-After while a service is away.

The runs talk to an OpenAI-compatible server on 127.0.0.1 that holds every model call until the
test opens its gate, so a burst of runs is provably in flight (each waiting on its model call)
when the fault happens. Nothing here sleeps to synchronize: it waits on the launcher's log lines,
on the fake server's count of held calls, and on the API's answers.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import psutil
import pytest
import redis

from agenticos.launcher import GaveUp, Supervisor
from tests.runs.fake_openai import FakeOpenAI

pytestmark = [pytest.mark.launcher, pytest.mark.timeout(300)]

TERMINAL = {"completed", "failed", "cancelled", "budget_exceeded", "guardrail_blocked"}
BURST = 6
OWNER = "first@owner.test"


def _free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _until(condition, *, timeout: float, what: str, every: float = 0.1):
    """Poll ``condition`` (a state we wait for, not a duration) until it is truthy."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(every)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


class GatedOpenAI(FakeOpenAI):
    """Holds every chat completion until ``open_gate()``, counting the calls it holds."""

    def __init__(self) -> None:
        super().__init__()
        self._gate = threading.Event()
        self._held = 0
        self._lock = threading.Lock()

    def handle(self, handler, body: dict) -> None:
        with self._lock:
            self._held += 1
        self._gate.wait()
        super().handle(handler, body)

    def hold(self) -> None:
        with self._lock:
            self._held = 0
        self._gate.clear()

    def held(self) -> int:
        with self._lock:
            return self._held

    def open_gate(self) -> None:
        self._gate.set()


class Launcher:
    """`agenticos up` as a child of the test, its output read line by line as it comes."""

    def __init__(self, env: dict, port: int, data_dir: Path) -> None:
        self.port = port
        self.data_dir = data_dir
        self.lines: list[str] = []
        self._new_line = threading.Condition()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "agenticos.cli", "up"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",
            start_new_session=True,
        )
        threading.Thread(target=self._read, daemon=True).start()
        self.key = ""

    def _read(self) -> None:
        for line in self.process.stdout:
            with self._new_line:
                self.lines.append(line.rstrip("\n"))
                self._new_line.notify_all()

    def mark(self) -> int:
        with self._new_line:
            return len(self.lines)

    def wait_for(self, pattern: str, *, since: int = 0, timeout: float = 60) -> re.Match:
        compiled = re.compile(pattern)
        deadline = time.monotonic() + timeout
        with self._new_line:
            while True:
                for line in self.lines[since:]:
                    found = compiled.search(line)
                    if found:
                        return found
                left = deadline - time.monotonic()
                if left <= 0 or self.process.poll() is not None:
                    tail = "\n".join(self.lines[-60:])
                    raise AssertionError(f"no line matching {pattern!r}:\n{tail}")
                self._new_line.wait(min(left, 1))

    def output(self, since: int = 0) -> str:
        with self._new_line:
            return "\n".join(self.lines[since:])

    def child(self, marker: str) -> psutil.Process:
        for process in psutil.Process(self.process.pid).children():
            if marker in " ".join(process.cmdline()):
                return process
        raise AssertionError(f"no child process running {marker!r}")

    def children_pids(self) -> dict[str, int]:
        markers = {"web": "uvicorn", "worker": "celery -A agenticos worker", "beat": " beat"}
        return {name: self.child(marker).pid for name, marker in markers.items()}

    def postmaster_pid(self) -> int:
        return int((self.data_dir / "pg" / "postmaster.pid").read_text().split()[0])

    def healthz(self) -> dict | None:
        try:
            with urllib.request.urlopen(
                f"http://127.0.0.1:{self.port}/healthz", timeout=5
            ) as response:
                return json.loads(response.read())
        except urllib.error.HTTPError as error:
            return json.loads(error.read())
        except OSError:
            return None

    def healthy(self) -> bool:
        return self.healthz() == {"db": "ok", "redis": "ok", "worker": "ok"}

    def api(self, method: str, path: str, body: dict | None = None):
        """(status, headers, JSON body) of an API call with the owner's key."""
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}/api/v1/{path}",
            method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={"Authorization": f"Bearer {self.key}", "Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                return response.status, response.headers, json.loads(response.read() or b"null")
        except urllib.error.HTTPError as error:
            raw = error.read()
            try:
                payload = json.loads(raw)
            except ValueError:
                payload = raw.decode(errors="replace")
            return error.code, error.headers, payload


@pytest.fixture(scope="module")
def fake_model():
    with GatedOpenAI() as server:
        yield server
        server.open_gate()  # release anything still waiting before the server stops


@pytest.fixture(scope="module")
def up(fake_model):
    """A fresh machine: no DATABASE_URL/REDIS_URL, so the launcher runs (and supervises) its own
    PostgreSQL and Redis. Its data outside pytest's basetemp with a short path (the embedded
    PostgreSQL's socket lives there)."""
    root = Path(tempfile.mkdtemp(prefix="aos-faults-"))
    root.chmod(0o755)  # the embedded PostgreSQL runs as its own system user when root starts it
    port = _free_port()
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in {"DATABASE_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE"}
    }
    env.update(
        {
            "AGENTICOS_DATA_DIR": str(root / "data"),
            "PORT": str(port),
            "AGENTICOS_ADMIN_EMAIL": OWNER,
            "AGENTICOS_ADMIN_PASSWORD": "first-owner-pass",
            "AGENTICOS_WORKER_CONCURRENCY": "1",
            # A request waits this long for a database session before it answers 503.
            "AGENTICOS_DB_POOL_TIMEOUT_SECONDS": "5",
            # The fake model listens on loopback, which the outbound check refuses unless the
            # operator allows it (docs/security.md), as a self-hosted model would be allowed.
            "OUTBOUND_ALLOW": "127.0.0.1",
        }
    )
    launcher = Launcher(env, port, root / "data")
    try:
        _until(
            launcher.healthy,
            timeout=180,
            what="the launcher to be healthy",
            every=0.3,
        )
        launcher.key = subprocess.run(
            [sys.executable, "-m", "agenticos.cli", "create-api-key", "--org", "default"]
            + ["--email", OWNER],
            env={**env, "DJANGO_SETTINGS_MODULE": "agenticos.settings.base"},
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        ).stdout.strip()
        launcher.agent_id = _agent_on(launcher, fake_model)
        yield launcher
    finally:
        if launcher.process.poll() is None:  # the last test stops it; a failure may not have
            children = psutil.Process(launcher.process.pid).children(recursive=True)
            launcher.process.send_signal(signal.SIGINT)
            try:
                launcher.process.wait(60)
            except subprocess.TimeoutExpired:
                launcher.process.kill()
            psutil.wait_procs(children, timeout=10)
        shutil.rmtree(root, ignore_errors=True)


def _agent_on(launcher: Launcher, server: GatedOpenAI) -> int:
    status, _, secret = launcher.api(
        "POST",
        "secrets/",
        {"name": "fake", "purpose": "openai_compatible", "value": "sk-fake"},
    )
    assert status == 201, secret
    status, _, profile = launcher.api(
        "POST",
        "model-profiles/",
        {
            "label": "Gated",
            "provider": "openai_compatible",
            "model_name": "gpt-4o-mini",
            "base_url": server.base_url,
            "secret_id": secret["id"],
        },
    )
    assert status == 201, profile
    status, _, agent = launcher.api(
        "POST",
        "agents/",
        {"name": "Faults", "spec": {"model_profile_id": profile["id"], "capabilities": []}},
    )
    assert status == 201, agent
    status, _, version = launcher.api("POST", f"agents/{agent['id']}/publish/", {})
    assert status in (200, 201), version
    return agent["id"]


def _start_runs(launcher: Launcher, count: int) -> list[int]:
    ids = []
    for number in range(count):
        status, _, run = launcher.api(
            "POST", "runs/", {"agent_id": launcher.agent_id, "input": f"hello {number}"}
        )
        assert status == 201, run
        ids.append(run["id"])
    return ids


def _ended(launcher: Launcher, ids: list[int]) -> dict[int, dict]:
    def all_ended():
        runs = {}
        for run_id in ids:
            status, _, run = launcher.api("GET", f"runs/{run_id}/")
            if status != 200 or run["status"] not in TERMINAL:
                return None
            runs[run_id] = run
        return runs

    return _until(all_ended, timeout=90, what=f"runs {ids} to end", every=0.3)


@contextlib.contextmanager
def _supervisor_paused(up: Launcher):
    """Hold the launcher (not its children) still, so a service the test kills stays down while
    the test looks at the outage; the launcher restarts it once it runs again."""
    os.kill(up.process.pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(up.process.pid, signal.SIGCONT)


def _burst_in_flight(launcher: Launcher, server: GatedOpenAI) -> list[int]:
    server.hold()
    ids = _start_runs(launcher, BURST)
    _until(lambda: server.held() >= BURST, timeout=60, what="the burst to reach the model")
    return ids


def _assert_all_completed(up: Launcher, runs: dict[int, dict]) -> None:
    outcomes = {run_id: (run["status"], run["stop_reason"]) for run_id, run in runs.items()}
    failed = [run_id for run_id, (status, _) in outcomes.items() if status != "completed"]
    # The worker's own account of a run that did not complete, for whoever reads the failure.
    told = "\n".join(
        line for line in up.output().splitlines() if any(f"run {i}" in line for i in failed)
    )
    assert not failed, f"{outcomes}\n{told}\n{up.output()[-6000:] if failed else ''}"


# --- the supervisor --------------------------------------------------------------------------


def test_a_killed_worker_web_or_beat_is_restarted_and_the_others_keep_serving(up, fake_model):
    for name in ("worker", "web", "beat"):
        before = up.children_pids()
        since = up.mark()
        os.kill(before[name], signal.SIGKILL)
        up.wait_for(rf"AgenticOS: {name} exited with code -9; restarting it in", since=since)
        if name != "web":
            # The API still answers while the worker or beat is down.
            status, _, _ = up.api("GET", "agents/")
            assert status == 200
        restarted = up.wait_for(rf"AgenticOS: {name} restarted \(pid (\d+)\)", since=since)
        _until(up.healthy, timeout=60, what=f"health after {name} restarted")
        after = up.children_pids()
        assert after[name] == int(restarted.group(1)) != before[name]
        others = {other: pid for other, pid in before.items() if other != name}
        assert {other: after[other] for other in others} == others  # untouched
    assert "giving up" not in up.output()
    # The restarted web and worker serve a run end to end.
    fake_model.open_gate()
    _assert_all_completed(up, _ended(up, _start_runs(up, 1)))


def test_the_supervisor_gives_up_on_a_process_that_keeps_dying_and_says_why():
    said: list[str] = []
    supervisor = Supervisor(restart_limit=3, restart_window=60, backoff_first=0.05, say=said.append)
    steady = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        supervisor.add_child("steady", lambda: steady)
        supervisor.add_child(
            "crasher", lambda: subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])
        )

        def gave_up():
            try:
                supervisor.check()
            except GaveUp as reason:
                return str(reason)
            return None

        reason = _until(gave_up, timeout=60, what="the supervisor to give up", every=0.02)
        assert re.fullmatch(
            r"crasher exited 3 times in \d+ s \(the limit is 3 in 60 s\); its last exit code "
            r"was 3",
            reason,
        ), reason
        assert said == [
            "AgenticOS: crasher exited with code 3; restarting it in 0.05 s (1 exit in the last 60 s).",
            said[1],
            "AgenticOS: crasher exited with code 3; restarting it in 0.1 s (2 exits in the last 60 s).",
            said[3],
        ] and said[1].startswith("AgenticOS: crasher restarted (pid ")
        assert steady.poll() is None  # the other child was never touched
    finally:
        steady.kill()
        steady.wait()


# --- Redis -----------------------------------------------------------------------------------


def test_a_redis_kill_with_runs_in_flight_loses_none_and_the_api_answers_503_meanwhile(
    up, fake_model
):
    ids = _burst_in_flight(up, fake_model)
    worker_pid = up.children_pids()["worker"]
    since = up.mark()
    with _supervisor_paused(up):
        redis_server = up.child("redis-server")
        redis_server.kill()
        _until(lambda: redis_server.status() == psutil.STATUS_ZOMBIE, timeout=30, what="Redis gone")
        status, headers, body = up.api("GET", "runs/")
        assert status == 503, body
        assert headers["Retry-After"] == "5"
        assert body["code"] == "service_unavailable" and "redis" in body["detail"]
    up.wait_for(r"AgenticOS: redis exited with code -9; restarting it in", since=since)
    up.wait_for(r"AgenticOS: redis restarted\.", since=since)
    fake_model.open_gate()
    _assert_all_completed(up, _ended(up, ids))
    # The worker rode over the outage (it reconnected; it was not restarted).
    assert up.children_pids()["worker"] == worker_pid
    assert "Unrecoverable error" not in up.output(since)
    # And the product serves new work without anyone touching it.
    _assert_all_completed(up, _ended(up, _start_runs(up, 1)))


def test_what_redis_acknowledged_survives_a_redis_crash(up):
    """The embedded Redis writes an append-only file: a write it answered (an enqueue, a frame)
    is on disk before the answer, so a killed redis-server comes back with it."""
    recorded = json.loads((up.data_dir / "services.json").read_text())
    client = redis.Redis.from_url(recorded["redis_url"])
    try:
        assert client.config_get("appendonly") == {"appendonly": "yes"}
        assert client.config_get("appendfsync") == {"appendfsync": "everysec"}
        client.set("faults:acknowledged", "kept")
        since = up.mark()
        up.child("redis-server").kill()
        up.wait_for(r"AgenticOS: redis restarted\.", since=since)
        assert client.get("faults:acknowledged") == b"kept"
    finally:
        client.close()


# --- PostgreSQL ------------------------------------------------------------------------------


def test_a_postgres_crash_with_runs_in_flight_loses_none_and_the_api_answers_503_meanwhile(
    up, fake_model
):
    ids = _burst_in_flight(up, fake_model)
    since = up.mark()
    with _supervisor_paused(up):
        # SIGQUIT is PostgreSQL's immediate shutdown: every backend is dropped, nothing is
        # written out, and the next start replays the write-ahead log — a crash, done politely.
        postmaster = psutil.Process(up.postmaster_pid())
        postmaster.send_signal(signal.SIGQUIT)
        postmaster.wait(30)
        status, headers, body = up.api("GET", "runs/")
        assert status == 503, body
        assert headers["Retry-After"] == "5"
        assert body["code"] == "service_unavailable" and "database" in body["detail"]
    up.wait_for(r"AgenticOS: postgres exited with code unknown; restarting it in", since=since)
    up.wait_for(r"AgenticOS: postgres restarted\.", since=since)
    fake_model.open_gate()
    # Each run books its model call on a session opened before the crash: replaced, not failed.
    _assert_all_completed(up, _ended(up, ids))
    _until(up.healthy, timeout=60, what="health after the PostgreSQL restart")
    _assert_all_completed(up, _ended(up, _start_runs(up, 1)))


# --- and still: a stop is a stop -------------------------------------------------------------


def test_sigterm_after_all_that_stops_everything_cleanly(up):
    """Last in the module: a supervisor that restarts what dies must still let SIGTERM (or
    Ctrl-C) stop everything, the embedded services included, without restarting anything."""
    children = psutil.Process(up.process.pid).children(recursive=True)
    postmaster = psutil.Process(up.postmaster_pid())
    since = up.mark()
    up.process.send_signal(signal.SIGTERM)
    assert up.process.wait(60) == 0
    gone, alive = psutil.wait_procs([*children, postmaster], timeout=30)
    assert alive == []
    output = up.output(since)
    assert "AgenticOS: stopped." in output and "restarting it" not in output
    assert up.healthz() is None
