"""`agenticos up` (and `make run`): services, migrations, bootstrap, then web + worker + beat +
the chat channels' listener together until Ctrl-C, which stops all of them and then the
embedded services."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from .embedded import ensure_services
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


def up() -> int:
    config = _settings_env()
    data_dir: Path = config["data_dir"]
    data_dir.mkdir(parents=True, exist_ok=True)
    environ = dict(os.environ)
    print(f"AgenticOS: data in {data_dir}", flush=True)
    services = ensure_services(data_dir, environ)
    derive_public_url(environ, config["port"])
    processes: dict[str, subprocess.Popen] = {}
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
        for name, command in _children(
            config["port"], config["worker_processes"], config["runs_per_worker"]
        ).items():
            processes[name] = subprocess.Popen(command, env=environ)
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
        return_code = 0
        while not stopping:
            exited = next((name for name, p in processes.items() if p.poll() is not None), None)
            if exited is not None:
                return_code = processes[exited].returncode or 1
                print(f"AgenticOS: {exited} exited with code {return_code}; stopping.", flush=True)
                break
            time.sleep(0.3)
        return return_code
    finally:
        _stop_all(processes)
        services.stop()
        print("AgenticOS: stopped.", flush=True)


def _stop_all(processes: dict[str, subprocess.Popen]) -> None:
    for process in processes.values():
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + 15
    for process in processes.values():
        remaining = max(0.1, deadline - time.monotonic())
        try:
            process.wait(remaining)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
