"""`agenticos up` (and `make run`): services, migrations, bootstrap, then web + worker + beat +
the chat channels' listener together until Ctrl-C, which stops all of them and then the
embedded services.

The launcher supervises what it started: one process that dies (a worker killed by the kernel,
a crashed web server, the embedded Redis) is started again after a short backoff while the
others keep serving. Only a process that keeps dying — AGENTICOS_RESTART_LIMIT exits within
AGENTICOS_RESTART_WINDOW_SECONDS — stops everything, with a line saying which one, how often and
with which exit code (docs/deployment.md "Supervision")."""

from __future__ import annotations

import functools
import os
import signal
import subprocess
import sys
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from .embedded import ServiceHandle, ensure_services
from .settings.env import uvicorn_proxy_arguments


def _settings_env():
    # The launcher runs before Django is configured; it reads the same typed readers.
    from agenticos.settings.env import env_int, env_path, env_str

    base_dir = Path(__file__).resolve().parent.parent
    return {
        "data_dir": env_path("AGENTICOS_DATA_DIR", base_dir / ".agenticos"),
        "port": env_int("PORT", 8000, minimum=1),
        # Worker processes; each holds AGENTICOS_RUNS_PER_WORKER runs on its event loop.
        "worker_processes": env_int("AGENTICOS_WORKER_CONCURRENCY", 2, minimum=1),
        "runs_per_worker": env_int("AGENTICOS_RUNS_PER_WORKER", 250, minimum=1),
        "admin_password_given": env_str("AGENTICOS_ADMIN_PASSWORD", None) is not None,
        # A process that exits this many times within the window is not going to recover on its
        # own (a bad setting, a port taken): stop and say so instead of restarting for ever.
        "restart_limit": env_int("AGENTICOS_RESTART_LIMIT", 5, minimum=1),
        "restart_window": env_int("AGENTICOS_RESTART_WINDOW_SECONDS", 60, minimum=1),
        # The first restart's wait, in milliseconds; each further exit in the window doubles it.
        "restart_backoff": env_int("AGENTICOS_RESTART_BACKOFF_MS", 500, minimum=0) / 1000,
    }


def derive_public_url(environ: dict, port: int) -> None:
    """Links in e-mails and notifications must reach this server, whichever port it is on: an
    unset AGENTICOS_PUBLIC_URL becomes the address the web server is started on."""
    if not environ.get("AGENTICOS_PUBLIC_URL"):
        environ["AGENTICOS_PUBLIC_URL"] = f"http://127.0.0.1:{port}"


def _setup_django(environ: dict) -> None:
    # The services and the public URL are decided by now; settings are evaluated from here on.
    os.environ.update(environ)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agenticos.settings.base")
    import django

    django.setup()


def prepare_database() -> tuple:
    """Migrate, sync the periodic schedule and bootstrap; returns bootstrap's result."""
    from django.conf import settings
    from django.core.management import call_command

    from agenticos.schedule import sync_schedule
    from apps.orgs.services import bootstrap

    call_command("migrate", interactive=False, verbosity=0)
    sync_schedule()
    return bootstrap(
        org_name=settings.AGENTICOS_ORG_NAME,
        admin_email=settings.AGENTICOS_ADMIN_EMAIL,
        admin_password=settings.AGENTICOS_ADMIN_PASSWORD,
    )


def worker_command(runs_per_worker: int, hostname: str) -> list[str]:
    """One worker process: Celery's thread pool sized to the runs it holds, each slot handing its
    run to the process's event loop (apps/runs/runtime.py, docs/runner.md)."""
    return [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "agenticos",
        "worker",
        "--loglevel",
        "INFO",
        "--pool",
        "threads",
        "--concurrency",
        str(runs_per_worker),
        "--hostname",
        hostname,
    ]


def _children(port: int, worker_processes: int, runs_per_worker: int) -> dict[str, list[str]]:
    python = sys.executable
    children = {
        "web": [
            python,
            "-m",
            "uvicorn",
            "agenticos.asgi:application",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--no-access-log",
            "--lifespan",
            "off",
            *uvicorn_proxy_arguments(),
        ],
    }
    for number in range(1, worker_processes + 1):
        name = "worker" if worker_processes == 1 else f"worker-{number}"
        children[name] = worker_command(runs_per_worker, f"worker{number}-{os.getpid()}@%h")
    # The schedule lives in the database (django-celery-beat), visible in the admin.
    children["beat"] = [python, "-m", "celery", "-A", "agenticos", "beat", "--loglevel", "INFO"]
    # The Mattermost bots' websockets (DMs reach no outgoing webhook): docs/channels.md.
    children["channels"] = [python, "-m", "agenticos.cli", "channels-listen"]
    return children


# The first restart is quick (a process killed once should be back before anyone notices); each
# further exit within the window doubles the wait, up to this, so a crash loop does not spin the
# machine.
BACKOFF_MAX_SECONDS = 10.0


@dataclass
class Child:
    """One supervised process: how to start it, the process now running, its recent exits."""

    name: str
    start: Callable[[], subprocess.Popen]
    process: subprocess.Popen | None = None
    exit_times: deque[float] = field(default_factory=deque)
    last_exit_code: int | None = None
    restart_at: float | None = None


@dataclass
class Service:
    """An embedded PostgreSQL or Redis under supervision: the launcher did not start it as a
    plain child (pgserver daemonizes PostgreSQL), so it is watched through its handle."""

    name: str
    handle: ServiceHandle
    exit_times: deque[float] = field(default_factory=deque)
    restart_at: float | None = None


class GaveUp(Exception):
    """A process exited too often in the window; the message says which and how."""


class Supervisor:
    """Restart what died, with backoff; give up on a process that keeps dying."""

    def __init__(
        self,
        *,
        restart_limit: int,
        restart_window: float,
        backoff_first: float = 0.5,
        say: Callable[[str], None],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.restart_limit = restart_limit
        self.restart_window = restart_window
        self.backoff_first = backoff_first
        self.say = say
        self.clock = clock
        self.children: dict[str, Child] = {}
        self.services: dict[str, Service] = {}

    def add_child(self, name: str, start: Callable[[], subprocess.Popen]) -> None:
        self.children[name] = Child(name=name, start=start, process=start())

    def add_service(self, name: str, handle: ServiceHandle) -> None:
        self.services[name] = Service(name=name, handle=handle)

    def check(self) -> None:
        """One round: notice exits, restart what is due. Raises GaveUp."""
        now = self.clock()
        # Services first: a child that died because Redis died is restarted against a Redis
        # that is already coming back.
        for service in self.services.values():
            if service.restart_at is None and not service.handle.alive():
                self._schedule(service, service.handle.exit_code(), now)
            if service.restart_at is not None and now >= service.restart_at:
                service.restart_at = None
                try:
                    service.handle.restart()
                except Exception as error:  # a failed start counts as one more exit
                    self.say(f"AgenticOS: {service.name} did not start again: {error}")
                    self._schedule(service, None, self.clock())
                else:
                    self.say(f"AgenticOS: {service.name} restarted.")
        for child in self.children.values():
            process = child.process
            if child.restart_at is None and process is not None and process.poll() is not None:
                child.last_exit_code = process.returncode
                child.process = None
                self._schedule(child, process.returncode, now)
            if child.restart_at is not None and now >= child.restart_at:
                child.restart_at = None
                child.process = child.start()
                self.say(f"AgenticOS: {child.name} restarted (pid {child.process.pid}).")

    def _schedule(self, item: Child | Service, exit_code: int | None, now: float) -> None:
        item.exit_times.append(now)
        while item.exit_times and item.exit_times[0] < now - self.restart_window:
            item.exit_times.popleft()
        exits = len(item.exit_times)
        code = "unknown" if exit_code is None else str(exit_code)
        if exits >= self.restart_limit:
            span = now - item.exit_times[0]
            raise GaveUp(
                f"{item.name} exited {exits} times in {span:.0f} s (the limit is "
                f"{self.restart_limit} in {self.restart_window:g} s); its last exit code was "
                f"{code}"
            )
        delay = min(BACKOFF_MAX_SECONDS, self.backoff_first * 2 ** (exits - 1))
        item.restart_at = now + delay
        self.say(
            f"AgenticOS: {item.name} exited with code {code}; restarting it in {delay:g} s "
            f"({exits} exit{'s' if exits > 1 else ''} in the last {self.restart_window:g} s)."
        )

    def stop_children(self) -> None:
        _stop_all([c.process for c in self.children.values() if c.process is not None])


def _say(line: str) -> None:
    print(line, flush=True)


def up() -> int:
    config = _settings_env()
    data_dir: Path = config["data_dir"]
    data_dir.mkdir(parents=True, exist_ok=True)
    environ = dict(os.environ)
    print(f"AgenticOS: data in {data_dir}", flush=True)
    services = ensure_services(data_dir, environ)
    derive_public_url(environ, config["port"])
    supervisor = Supervisor(
        restart_limit=config["restart_limit"],
        restart_window=config["restart_window"],
        backoff_first=config["restart_backoff"],
        say=_say,
    )
    stopping = False

    def request_stop(signum, frame):
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGINT, request_stop)
    signal.signal(signal.SIGTERM, request_stop)
    try:
        services.record(data_dir / "services.json", public_url=environ["AGENTICOS_PUBLIC_URL"])
        _setup_django(environ)
        organization, owner, generated_password = prepare_database()
        for name, handle in services.supervised().items():
            supervisor.add_service(name, handle)
        for name, command in _children(
            config["port"], config["worker_processes"], config["runs_per_worker"]
        ).items():
            supervisor.add_child(name, functools.partial(subprocess.Popen, command, env=environ))
        url = f"http://127.0.0.1:{config['port']}/"
        if generated_password:
            login = f"{owner.email} / {generated_password}  (generated now; shown this once)"
        elif config["admin_password_given"]:
            login = f"{owner.email} / the password in AGENTICOS_ADMIN_PASSWORD"
        else:
            login = f"{owner.email} / the password printed on the first start"
        print(
            f"\n  Console:  {url}?org={organization.pk}\n  Owner:    {login}\n  Ctrl-C stops everything.\n",
            flush=True,
        )
        while not stopping:
            try:
                supervisor.check()
            except GaveUp as reason:
                print(f"AgenticOS: giving up: {reason}; stopping.", flush=True)
                return 1
            time.sleep(0.2)
        return 0
    finally:
        supervisor.stop_children()
        services.stop()
        print("AgenticOS: stopped.", flush=True)


def _stop_all(processes: list[subprocess.Popen]) -> None:
    for process in processes:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + 15
    for process in processes:
        remaining = max(0.1, deadline - time.monotonic())
        try:
            process.wait(remaining)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
