"""A real worker process, as `agenticos up` starts one, serving this pytest process.

`celery worker --pool threads --concurrency N` on a queue of its own (another suite's worker on
the same Redis never takes these tasks), with the suite's test database and frame keys
(`AGENTICOS_SERVED_SUITE_PID`, agenticos/settings/test.py). Every PostgreSQL connection it opens
carries its own `application_name` (libpq's PGAPPNAME), so a test can count them.
"""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import threading
import time
import uuid
from contextlib import contextmanager
from pathlib import Path

from django.db import connection

from agenticos.celery import app as celery_app
from agenticos.launcher import worker_command

READY_SECONDS = 60


class WorkerProcess:
    def __init__(self, *, runs_per_worker: int = 50, env: dict | None = None) -> None:
        self.queue = f"agenticos-test-{uuid.uuid4().hex[:8]}"
        self.application_name = f"aos-worker-{uuid.uuid4().hex[:8]}"
        self.runs_per_worker = runs_per_worker
        self._log = Path(tempfile.mkstemp(prefix="aos-worker-", suffix=".log")[1])
        command = worker_command(runs_per_worker, f"{self.queue}@%h") + ["--queues", self.queue]
        environ = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "agenticos.settings.test",
            "AGENTICOS_SERVED_SUITE_PID": str(os.getpid()),
            "PGAPPNAME": self.application_name,
            **(env or {}),
        }
        self._log_file = self._log.open("wb")
        self.process = subprocess.Popen(
            command,
            env=environ,
            stdout=self._log_file,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    @property
    def log(self) -> str:
        return self._log.read_text(errors="replace")

    def wait_ready(self) -> None:
        deadline = time.monotonic() + READY_SECONDS
        while time.monotonic() < deadline:
            if " ready." in self.log:
                return
            if self.process.poll() is not None:
                raise AssertionError(
                    f"the worker exited with {self.process.returncode}:\n{self.log[-4000:]}"
                )
            time.sleep(0.1)
        raise AssertionError(
            f"the worker was not ready after {READY_SECONDS}s:\n{self.log[-4000:]}"
        )

    def kill(self) -> None:
        """SIGKILL: no shutdown, no booking — a machine that lost power."""
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(10)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._log_file.close()
        self._log.unlink(missing_ok=True)

    def connections(self) -> int:
        """PostgreSQL connections this worker process holds right now."""
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s",
                [self.application_name],
            )
            return cursor.fetchone()[0]


@contextmanager
def serving_worker(**options):
    """A worker process taking this suite's runs (run_create enqueues on its queue) while open."""
    worker = WorkerProcess(**options)
    previous = celery_app.conf.task_default_queue
    celery_app.conf.task_default_queue = worker.queue
    try:
        worker.wait_ready()
        yield worker
    finally:
        celery_app.conf.task_default_queue = previous
        worker.stop()


class ConnectionPeak:
    """Samples a worker's PostgreSQL connections every 50 ms on a thread of its own."""

    def __init__(self, worker: WorkerProcess) -> None:
        self.worker = worker
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        try:
            while not self._stop.is_set():
                self.peak = max(self.peak, self.worker.connections())
                time.sleep(0.05)
        finally:
            connection.close()

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(5)
