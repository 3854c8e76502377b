"""Many runs per worker (`make bench`): N runs of one and of three model requests against an
OpenAI-compatible server on 127.0.0.1 that answers every request after a fixed 1.0 s, executed
by worker processes started as `agenticos up` starts them with its defaults
(AGENTICOS_WORKER_CONCURRENCY processes, each `--pool threads --concurrency
AGENTICOS_RUNS_PER_WORKER`).

Printed per case: the time from the first run created (through the service the API calls) until
all are terminal, as a multiple of the provider's latency; the peak RSS of each worker process;
the peak PostgreSQL connections of each worker process (sampled from pg_stat_activity by the
`application_name` each one carries). Then one worker process holding 200 runs in flight, for
its RSS.

Beside each case, the floor measured in the same run (`bench/bare_loop.py`): bare pydantic-ai —
no governance, no database, no Celery — running the same runs against the same provider with the
same tools, split over the same number of processes with the same slots each. The ratios
governed / bare (time, and CPU per request) are what this bench reports; absolute times on a
shared two-core machine move with its load.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psutil
import pytest
from django.conf import settings
from django.db import connection

from agenticos.celery import app as celery_app
from agenticos.launcher import worker_command
from apps.orgs.choices import Role
from apps.runs.models import Run
from apps.runs.services import run_create
from apps.spend.models import LedgerEntry
from tests.factories import OrganizationFactory, member_of
from tests.runs.factories import compatible_profile, published_agent

ROOT = Path(__file__).resolve().parent.parent
LATENCY_SECONDS = 1.0
# BENCH_RUNTIME_CASES="100x1,100x3" runs only those (a quick comparison); all four by default.
CASES = [
    tuple(int(n) for n in case.split("x"))
    for case in os.environ.get("BENCH_RUNTIME_CASES", "100x1,100x3,500x1,500x3").split(",")
]
CREATING_THREADS = 6
TERMINAL = ("completed", "failed", "cancelled", "budget_exceeded", "guardrail_blocked")


class Provider:
    """tests/runs/fake_openai.py in a process of its own, so its threads do not share this one's GIL."""

    def __init__(self, latency: float) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.runs.fake_openai", str(latency)],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.base_url = self.process.stdout.readline().strip()

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(10)


class Workers:
    """Worker processes as `agenticos up` starts them, each with an application_name of its own."""

    def __init__(self, *, processes: int, runs_per_worker: int) -> None:
        self.queue = f"agenticos-bench-{uuid.uuid4().hex[:8]}"
        self.names = [f"aos-bench-{uuid.uuid4().hex[:6]}" for _ in range(processes)]
        self.processes = []
        for number, name in enumerate(self.names, start=1):
            env = {
                **os.environ,
                "DJANGO_SETTINGS_MODULE": "agenticos.settings.test",
                "AGENTICOS_SERVED_SUITE_PID": str(os.getpid()),
                "PGAPPNAME": name,
                "LOG_LEVEL": "WARNING",
            }
            command = worker_command(runs_per_worker, f"bench{number}-{self.queue}@%h") + [
                "--queues",
                self.queue,
            ]
            self.processes.append(
                subprocess.Popen(
                    command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
                )
            )
        self.peak_rss = [0] * processes
        self.peak_connections = [0] * processes
        self._stop = threading.Event()
        self._sampler: threading.Thread | None = None

    def start_sampling(self) -> None:
        self.peak_rss = [0] * len(self.processes)
        self.peak_connections = [0] * len(self.processes)
        self._stop.clear()
        self._sampler = threading.Thread(target=self._sample, daemon=True)
        self._sampler.start()

    def stop_sampling(self) -> None:
        self._stop.set()
        self._sampler.join(5)

    def _sample(self) -> None:
        handles = [psutil.Process(p.pid) for p in self.processes]
        try:
            while not self._stop.is_set():
                with connection.cursor() as cursor:
                    cursor.execute(
                        "SELECT application_name, count(*) FROM pg_stat_activity "
                        "WHERE application_name = ANY(%s) GROUP BY 1",
                        [self.names],
                    )
                    counts = dict(cursor.fetchall())
                for index, name in enumerate(self.names):
                    self.peak_connections[index] = max(
                        self.peak_connections[index], counts.get(name, 0)
                    )
                    self.peak_rss[index] = max(
                        self.peak_rss[index], handles[index].memory_info().rss
                    )
                time.sleep(0.1)
        finally:
            connection.close()

    def cpu_seconds(self) -> float:
        """CPU time the worker processes used so far (user + system, every thread)."""
        total = 0.0
        for process in self.processes:
            times = psutil.Process(process.pid).cpu_times()
            total += times.user + times.system
        return total

    def stop(self) -> None:
        for process in self.processes:
            process.terminate()
        for process in self.processes:
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()


def _wait_all(run_ids: list[int], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not Run.objects.filter(pk__in=run_ids).exclude(status__in=TERMINAL).exists():
            return
        time.sleep(0.05)
    raise AssertionError(f"runs still unfinished after {timeout}s")


@pytest.fixture
def cast(transactional_db):
    org = OrganizationFactory(
        name="Bench", slug=f"bench-{uuid.uuid4().hex[:6]}", monthly_budget_usd=None
    )
    user = member_of(org, Role.MEMBER, f"bench-{uuid.uuid4().hex[:6]}@bench.test")
    return org, user


def _measure(workers: Workers, org, user, agent, count: int, prompt: str) -> dict:
    workers.start_sampling()
    cpu_before = workers.cpu_seconds()

    def create(_) -> Run:
        try:
            return run_create(actor=user, organization=org, agent=agent, input=prompt)
        finally:
            connection.close()

    started = time.perf_counter()
    # A burst, as concurrent POST /runs/ would be: several creating threads at once.
    with ThreadPoolExecutor(max_workers=CREATING_THREADS) as creating:
        runs = list(creating.map(create, range(count)))
    created = time.perf_counter() - started
    _wait_all([run.pk for run in runs], timeout=600)
    elapsed = time.perf_counter() - started
    workers.stop_sampling()
    cpu = workers.cpu_seconds() - cpu_before
    statuses = list(
        Run.objects.filter(pk__in=[run.pk for run in runs]).values_list("status", "request_count")
    )
    failures = set(
        Run.objects.filter(pk__in=[run.pk for run in runs])
        .exclude(status="completed")
        .values_list("status", "error")
    )
    return {
        "cpu": cpu,
        "failures": failures,
        "elapsed": elapsed,
        "created": created,
        "errors": sum(1 for status, _ in statuses if status != "completed"),
        "requests": sum(requests for _, requests in statuses),
        "entries": LedgerEntry.objects.filter(ledger__run__in=runs).count(),
        "rss_mb": [rss / 2**20 for rss in workers.peak_rss],
        "connections": list(workers.peak_connections),
        "phases": _phases([run.pk for run in runs]),
    }


def _phases(run_ids: list[int]) -> dict:
    """Where the runs' time went, from their own rows: created → claimed (waiting for a slot, the
    broker and the claim), claimed → ended (assembling, the requests, the booking)."""
    rows = list(
        Run.objects.filter(pk__in=run_ids).values_list("created_at", "started_at", "ended_at")
    )
    first = min(created for created, _, _ in rows)

    def quantiles(values: list[float]) -> tuple[float, float, float]:
        values = sorted(values)
        return tuple(values[min(len(values) - 1, int(q * len(values)))] for q in (0.5, 0.95, 1.0))

    return {
        "created": quantiles([(created - first).total_seconds() for created, _, _ in rows]),
        "waited": quantiles([(started - created).total_seconds() for created, started, _ in rows]),
        "ran": quantiles([(ended - started).total_seconds() for _, started, ended in rows]),
    }


def _bare(provider: Provider, *, processes: int, slots: int, count: int, prompt: str) -> dict:
    """The same runs on bare pydantic-ai, ``processes`` processes at once (bench/bare_loop.py)."""
    share = [count // processes + (1 if i < count % processes else 0) for i in range(processes)]
    started = time.perf_counter()
    children = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "bench.bare_loop",
                provider.base_url,
                str(n),
                prompt,
                str(slots),
            ],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            text=True,
        )
        for n in share
    ]
    results = [
        json.loads(child.communicate(timeout=900)[0].strip().splitlines()[-1]) for child in children
    ]
    # Each child's own clock starts after Django's setup; the slowest child is the case's time.
    return {
        "elapsed": max(r["elapsed"] for r in results),
        "wall_with_startup": time.perf_counter() - started,
        "cpu": sum(r["cpu"] for r in results),
        "requests": sum(r["requests"] for r in results),
    }


def _report_bare(governed: dict, bare: dict) -> None:
    governed_cpu = governed["cpu"] * 1000 / max(1, governed["requests"])
    bare_cpu = bare["cpu"] * 1000 / max(1, bare["requests"])
    print(
        f"    bare pydantic-ai, same processes and slots: {bare['elapsed']:6.2f} s, "
        f"{bare_cpu:.1f} ms CPU per request ({bare['requests']} requests); "
        f"governed / bare: time {governed['elapsed'] / bare['elapsed']:.2f}x, "
        f"CPU per request {governed_cpu / bare_cpu:.2f}x"
    )


def _report(label: str, result: dict) -> None:
    rss = ", ".join(f"{mb:.0f} MB" for mb in result["rss_mb"])
    connections = ", ".join(str(c) for c in result["connections"])
    print(
        f"  {label:<22} {result['elapsed']:6.2f} s = {result['elapsed'] / LATENCY_SECONDS:5.1f}x the provider's "
        f"latency (creating them, {CREATING_THREADS} threads at once: {result['created']:.2f} s); "
        f"errors {result['errors']}; "
        f"{result['requests']} requests, {result['entries']} ledger entries; peak worker RSS [{rss}]; "
        f"peak PostgreSQL connections per worker [{connections}]; worker CPU "
        f"{result['cpu'] * 1000 / max(1, result['requests']):.1f} ms per request "
        f"({result['cpu']:.1f} s in all)"
    )
    print(
        "    "
        + "; ".join(
            f"{name} p50 {p50:.2f} s, p95 {p95:.2f} s, max {top:.2f} s"
            for name, (p50, p95, top) in (
                ("created after the first", result["phases"]["created"]),
                ("queued until claimed", result["phases"]["waited"]),
                ("claimed until ended", result["phases"]["ran"]),
            )
        )
    )
    for status, error in result["failures"]:
        print(f"    not completed: {status}: {error}")


@pytest.mark.bench
@pytest.mark.timeout(1800)  # four cases and 200 in flight, on a machine shared with other suites
def test_many_runs_per_worker_against_a_one_second_provider(cast):
    org, user = cast
    provider = Provider(LATENCY_SECONDS)
    try:
        _bench(org, user, provider)
    finally:
        provider.stop()


def _bench(org, user, provider: Provider) -> None:
    processes = int(os.environ.get("AGENTICOS_WORKER_CONCURRENCY", "2"))
    runs_per_worker = settings.AGENTICOS_RUNS_PER_WORKER
    workers = Workers(processes=processes, runs_per_worker=runs_per_worker)
    celery_app.conf.task_default_queue = workers.queue
    try:
        profile = compatible_profile(org, base_url=provider.base_url, model_name="bench-model")
        agent = published_agent(
            org,
            model_profile_id=profile.pk,
            capabilities=[{"id": "planning"}],
            limits={"max_steps": 10},
        )
        # Warm every worker up (imports, first connections, the provider's client) before timing.
        _measure(workers, org, user, agent, 4 * processes, "warm up")
        print()
        print(
            f"worker runtime bench: {processes} worker processes x {runs_per_worker} runs each "
            f"(agenticos up's defaults), provider latency {LATENCY_SECONDS:.1f} s"
        )
        for count, requests in CASES:
            prompt = "hello" if requests == 1 else f"/tools {requests - 1} read_plan"
            result = _measure(workers, org, user, agent, count, prompt)
            _report(f"{count} x {requests} request{'s' if requests > 1 else ''}", result)
            bare = _bare(
                provider, processes=processes, slots=runs_per_worker, count=count, prompt=prompt
            )
            _report_bare(result, bare)
            assert bare["requests"] == count * requests
            assert result["errors"] == 0
            assert result["requests"] == count * requests
    finally:
        celery_app.conf.task_default_queue = "celery"
        workers.stop()

    # One worker process holding 200 runs at once, for its memory.
    workers = Workers(processes=1, runs_per_worker=200)
    celery_app.conf.task_default_queue = workers.queue
    try:
        _measure(workers, org, user, agent, 4, "warm up")
        result = _measure(workers, org, user, agent, 200, "/tools 2 read_plan")
        _report("200 in flight, 1 worker", result)
        assert result["errors"] == 0
    finally:
        celery_app.conf.task_default_queue = "celery"
        workers.stop()
