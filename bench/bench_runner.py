"""Runner benchmarks (`make bench`): governance overhead per model request, and runs per second
through Celery with two worker processes, on the offline model.

Overhead: the same 20-request FunctionModel script (the offline model's ``/steps 19``) run bare —
pydantic-ai's own ``Agent.iter`` loop, streaming every node, nothing else — and governed — the
runner's ``drive()`` with the budget guard (a reservation on the locked counters before each
request — usually made ahead by the previous request's booking — and the priced booking of each
response in the ledger), the cost and text frames published to Redis, and the cancel watcher. The
difference divided by the 20 requests is the governance overhead per model request. The time the
guard adds on each request's own path is reported too, request by request, from further runs
(the timing code would otherwise add to the overhead it measures).

Throughput: N runs created through the service (as the API does), executed by two separate
``celery worker`` processes (solo pool) against the same PostgreSQL and Redis.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
import redis
from asgiref.sync import async_to_sync
from django.conf import settings
from django.db import connection
from pydantic_ai import Agent, UsageLimits

from agenticos.celery import app as celery_app
from agenticos.heap import freeze_startup_heap
from agenticos.settings.env import database_url_of
from apps.orgs.choices import Role
from apps.runs import runner
from apps.runs.events import FramePublisher
from apps.runs.models import Run
from apps.runs.offline import OfflineModel, offline_toolset
from apps.runs.services import run_claim_running, run_create
from apps.spend import guard as guard_module
from apps.spend.models import Ledger
from apps.spend.services import month_of
from tests.factories import OrganizationFactory, member_of
from tests.runs.factories import published_agent

STEPS = 20
PAIRS = int(os.environ.get("RUNNER_BENCH_PAIRS", "100"))
THROUGHPUT_RUNS = int(os.environ.get("RUNNER_BENCH_RUNS", "60"))
GUARD_RUNS = 10
FLOOR_SAMPLES_PER_PAIR = 5
ROOT = Path(__file__).resolve().parent.parent


def _p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(0.99 * (len(ordered) - 1))))]


def _bare_agent() -> Agent:
    return Agent(
        OfflineModel(), instructions="You are a helpful test agent.", toolsets=[offline_toolset()]
    )


async def _bare_run(agent: Agent, prompt: str) -> None:
    async with agent.iter(prompt, usage_limits=UsageLimits(request_limit=STEPS)) as agent_run:
        async for node in agent_run:
            if Agent.is_model_request_node(node) or Agent.is_call_tools_node(node):
                async with node.stream(agent_run.ctx) as stream:
                    async for _ in stream:
                        pass
    assert agent_run.result is not None and agent_run.usage.requests == STEPS


@pytest.fixture
def cast(transactional_db):
    org = OrganizationFactory(
        name="Bench", slug=f"bench-{uuid.uuid4().hex[:6]}", monthly_budget_usd=100000
    )
    user = member_of(org, Role.MEMBER, f"bench-{uuid.uuid4().hex[:6]}@bench.test")
    agent = published_agent(org, limits={"max_steps": STEPS}, budget={"monthly_usd": "100000"})
    return org, user, agent


def _governed_run(user, org, agent, prompt: str) -> float:
    """One governed run through the runner's drive(), as execute_run drives it; its wall time."""
    run = run_create(actor=user, organization=org, agent=agent, input=prompt)
    assert run_claim_running(run.pk)
    run = Run.objects.select_related("organization", "agent", "agent_version").get(pk=run.pk)
    prepared = runner.prepare(run)
    frames = FramePublisher(run.pk)
    try:
        started = time.perf_counter()
        async_to_sync(runner.drive)(prepared, frames, runner.DriveState())
        elapsed = time.perf_counter() - started
    finally:
        frames.close()
    assert len(prepared.meter.records) == STEPS
    return elapsed


@pytest.mark.bench
def test_governance_overhead_per_model_request(cast):
    org, user, agent = cast
    prompt = f"/steps {STEPS - 1}"
    freeze_startup_heap()  # as a worker does once it is ready (agenticos/heap.py)

    bare_times: list[float] = []
    governed_times: list[float] = []
    floor_times: list[float] = []
    floor: _Floor | None = None
    for index in range(PAIRS + 3):  # three warm-up pairs are discarded
        agent_bare = (
            _bare_agent()
        )  # built before the clock starts, as prepare() is for the governed run
        started = time.perf_counter()
        async_to_sync(_bare_run)(agent_bare, prompt)
        bare = time.perf_counter() - started
        governed = _governed_run(user, org, agent, prompt)
        floor = floor or _Floor(
            org, agent
        )  # its ledger entries go on the first governed run's ledger
        samples = [floor.sample() for _ in range(FLOOR_SAMPLES_PER_PAIR)]
        if index >= 3:
            bare_times.append(bare)
            governed_times.append(governed)
            floor_times.extend(samples)
    floor.close()

    # Separately (timing code inside the runs measured above would add to what they measure):
    # the time the guard adds on each request's own path; the booking itself runs beside it.
    guard_times: list[float] = []
    original = guard_module.BudgetGuard.wrap_model_request

    async def timed_wrap(self, ctx, *, request_context, handler):
        inner = 0.0

        async def timed_handler(rc):
            nonlocal inner
            started = time.perf_counter()
            try:
                return await handler(rc)
            finally:
                inner = time.perf_counter() - started

        started = time.perf_counter()
        response = await original(self, ctx, request_context=request_context, handler=timed_handler)
        guard_times.append(time.perf_counter() - started - inner)
        return response

    guard_module.BudgetGuard.wrap_model_request = timed_wrap
    try:
        for _ in range(GUARD_RUNS):
            _governed_run(user, org, agent, prompt)
    finally:
        guard_module.BudgetGuard.wrap_model_request = original

    per_request_ms = [
        (g - b) / STEPS * 1000 for g, b in zip(governed_times, bare_times, strict=True)
    ]
    guard_ms = [t * 1000 for t in guard_times]
    bare_per_request_ms = statistics.median(bare_times) / STEPS * 1000
    governed_per_request_ms = statistics.median(governed_times) / STEPS * 1000
    print()
    print(f"runner bench: {PAIRS} pairs of {STEPS}-request runs (offline FunctionModel script)")
    print(f"  bare pydantic-ai      median {bare_per_request_ms:.3f} ms per request")
    print(f"  governed (runner)     median {governed_per_request_ms:.3f} ms per request")
    print(
        f"  governance overhead   median {statistics.median(per_request_ms):.3f} ms, "
        f"p99 {_p99(per_request_ms):.3f} ms per request "
        f"(governed/bare ratio {governed_per_request_ms / bare_per_request_ms:.2f}x)"
    )
    floor_ms = statistics.median(floor_times) * 1000
    print(
        f"  the floor             median {floor_ms:.3f} ms per request: one aggregate read, one ledger "
        f"commit and one publish, each a round trip from this process, measured between the pairs"
    )
    print(
        f"  overhead / floor      median {statistics.median(per_request_ms) / floor_ms:.2f}x "
        "(the issue's target: at most 1 ms on a floor of about 0.5 ms, i.e. 2x)"
    )
    print(
        f"  inside the guard      median {statistics.median(guard_ms):.3f} ms, p99 {_p99(guard_ms):.3f} ms "
        f"per request over {len(guard_ms)} requests of {GUARD_RUNS} further runs (on the request's path: "
        "the estimate, the wait for the previous booking, a reservation when the one made ahead does "
        "not cover the request)"
    )


class _Floor:
    """What the issue calls the floor of governing one model request: one aggregate read (this
    month's spend of the agent), one ledger commit (an entry inserted and committed) and one
    publish (a frame appended to a Redis stream) — each one round trip, measured in the same run
    as the overhead so that both see the same machine."""

    def __init__(self, org, agent) -> None:
        run = Run.objects.filter(agent=agent).order_by("pk").first()
        self.ledger_id = Ledger.objects.get(run=run).pk
        self.org_id, self.agent_id, self.month = org.pk, agent.pk, month_of()
        self.redis = redis.Redis.from_url(settings.REDIS_URL)
        self.key = f"agenticos:bench:floor:{uuid.uuid4().hex}"

    def sample(self) -> float:
        started = time.perf_counter()
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT COALESCE(SUM(cost_usd), 0) FROM spend_ledgerentry WHERE agent_id = %s AND month = %s",
                [self.agent_id, self.month],
            )
            cursor.fetchone()
            cursor.execute(
                "INSERT INTO spend_ledgerentry (ledger_id, organization_id, agent_id, kind, provider, "
                "model_name, input_tokens, output_tokens, cost_usd, priced, month, created_at) "
                "VALUES (%s, %s, %s, 'model_request', 'offline', 'offline', 0, 0, 0, true, %s, now())",
                [self.ledger_id, self.org_id, self.agent_id, self.month],
            )
        self.redis.xadd(self.key, {"frame": '{"type": "cost"}'}, maxlen=1000, approximate=True)
        return time.perf_counter() - started

    def close(self) -> None:
        self.redis.delete(self.key)


def _worker_env() -> dict[str, str]:
    return {
        **os.environ,
        # The test database pytest-django created, which this test commits its rows to.
        "DATABASE_URL": database_url_of(settings.DATABASES["default"]),
        "REDIS_URL": settings.REDIS_URL,
        "DJANGO_SETTINGS_MODULE": "agenticos.settings.base",
        "LOG_LEVEL": "WARNING",
    }


@pytest.mark.bench
def test_runs_per_second_through_celery_with_two_worker_processes(cast):
    org, user, agent = cast
    queue = f"agenticos-bench-{uuid.uuid4().hex[:8]}"
    celery = str(Path(sys.executable).with_name("celery"))
    workers = [
        subprocess.Popen(
            [
                celery,
                "-A",
                "agenticos",
                "worker",
                "-P",
                "solo",
                "-Q",
                queue,
                "-n",
                f"bench{n}-{queue}@%h",
                "--without-gossip",
                "--without-mingle",
                "--loglevel=WARNING",
            ],
            cwd=ROOT,
            env=_worker_env(),
        )
        for n in (1, 2)
    ]
    celery_app.conf.task_default_queue = queue
    try:
        # Warm both workers up (imports, first connections) before timing.
        warm = [
            run_create(actor=user, organization=org, agent=agent, input="warm up") for _ in range(4)
        ]
        _wait_all([r.pk for r in warm], timeout=120)

        started = time.perf_counter()
        runs = [
            run_create(actor=user, organization=org, agent=agent, input=f"hello {n}")
            for n in range(THROUGHPUT_RUNS)
        ]
        _wait_all([r.pk for r in runs], timeout=300)
        elapsed = time.perf_counter() - started
    finally:
        celery_app.conf.task_default_queue = "celery"
        for worker in workers:
            worker.terminate()
        for worker in workers:
            worker.wait(timeout=30)
    completed = Run.objects.filter(pk__in=[r.pk for r in runs], status="completed").count()
    assert completed == THROUGHPUT_RUNS
    print()
    print(
        f"runner bench: {THROUGHPUT_RUNS} runs through Celery, 2 worker processes (solo pool): "
        f"{THROUGHPUT_RUNS / elapsed:.1f} completed runs/s ({elapsed:.2f} s in all)"
    )


def _wait_all(run_ids: list[int], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pending = Run.objects.filter(pk__in=run_ids, status__in=["queued", "running"]).count()
        if not pending:
            return
        time.sleep(0.02)
    connection.close()
    raise AssertionError(f"runs still pending after {timeout}s")
