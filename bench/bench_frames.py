"""Websocket frame latency (`make bench`): from the runner emitting a frame to a client's receipt.

A run streams on the offline model (``/steps N``: a tool call, its result, a cost frame and a
context frame per request, then the answer) through the real runner (``execute_run``) in a
forked worker process, while a real websocket client (the `websockets` package, in a thread)
follows ``/ws/runs/{id}/`` on the ASGI application served by uvicorn (in a thread of this
process). Each frame is timestamped when the runner emits it — numbered for a write at once, or
held to ride with the next one (docs/live-runs.md, "Held frames"), so the hold counts; the client
timestamps its receipt; both read ``perf_counter`` (CLOCK_MONOTONIC, one clock for the machine).
Median and p99 over every frame of every run.

The web server and the client share this process (and its GIL), and the machine is shared with
other engineers' suites, so the figures are an upper bound of what a quiet deployment sees.
Target (issue 5): median at most 5 ms, p99 at most 20 ms on loopback.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import statistics
import threading
import time
import uuid

import pytest
from django.db import connections
from websockets.sync.client import connect

from apps.orgs.choices import Role
from apps.orgs.services import api_key_create
from apps.runs import events
from apps.runs.models import Run
from apps.runs.runner import execute_run
from tests.factories import OrganizationFactory, member_of
from tests.runs.factories import published_agent
from tests.runs.live import asgi_server  # noqa: F401  (fixture)

RUNS = int(os.environ.get("FRAMES_BENCH_RUNS", "12"))
STEPS = int(os.environ.get("FRAMES_BENCH_STEPS", "20"))


def _worker(run_id: int, results) -> None:
    """A worker process: run it through the real runner, timestamping every frame's send."""
    sent: dict[int, float] = {}
    original_numbered = events.FramePublisher._numbered

    def timed_numbered(self, frames):
        numbered = original_numbered(self, frames)
        emitted = time.perf_counter()
        for seq, _ in numbered:
            sent[seq] = emitted
        return numbered

    events.FramePublisher._numbered = timed_numbered
    events._client = None  # a connection of its own, not the parent's socket
    try:
        execute_run(run_id)
    finally:
        connections.close_all()
        results.put(sent)


def _p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(0.99 * (len(ordered) - 1))))]


@pytest.mark.bench
def test_websocket_frame_latency_from_the_runner_to_the_client(asgi_server):  # noqa: F811
    org = OrganizationFactory(
        name="Bench", slug=f"bench-{uuid.uuid4().hex[:6]}", monthly_budget_usd=100000
    )
    user = member_of(org, Role.MEMBER, f"bench-{uuid.uuid4().hex[:6]}@bench.test")
    agent = published_agent(
        org,
        capabilities=[{"id": "planning"}],
        limits={"max_steps": STEPS + 5},
        budget={"monthly_usd": "100000"},
    )
    _, key = api_key_create(actor=None, organization=org, user=user, name="bench")

    forked = multiprocessing.get_context("fork")

    latencies: list[float] = []
    frame_count = 0
    for index in range(RUNS + 2):  # two warm-up runs are discarded
        run = Run.objects.create(
            organization=org,
            agent=agent,
            agent_version=agent.current_version,
            user=user,
            input=f"/steps {STEPS}",
        )
        events.reset_frames(run.pk)
        received: dict[int, float] = {}
        connected = threading.Event()

        def follow(run_id=run.pk, received=received, connected=connected):
            with connect(
                f"ws://{asgi_server}/ws/runs/{run_id}/",
                additional_headers={"Authorization": f"Bearer {key}"},
            ) as client:
                connected.set()
                for message in client:
                    received[json.loads(message)["seq"]] = time.perf_counter()

        client = threading.Thread(target=follow)
        client.start()
        assert connected.wait(10)
        time.sleep(0.05)  # the consumer's first XREAD is waiting before the run starts
        connections.close_all()  # the forked worker opens its own
        results = forked.Queue()
        worker = forked.Process(target=_worker, args=(run.pk, results))
        worker.start()
        sent = results.get(timeout=60)
        worker.join(30)
        client.join(30)
        assert Run.objects.get(pk=run.pk).status == "completed"
        if index < 2:
            continue
        frame_count += len(received)
        latencies += [(at - sent[seq]) * 1000 for seq, at in received.items()]

    median, p99 = statistics.median(latencies), _p99(latencies)
    print(
        f"\nwebsocket frame latency, runner emits → client receipt: {frame_count} frames over {RUNS} runs "
        f"(/steps {STEPS}, offline model): median {median:.2f} ms, p99 {p99:.2f} ms, "
        f"max {max(latencies):.2f} ms (target: median ≤ 5 ms, p99 ≤ 20 ms)"
    )
    assert frame_count >= RUNS * STEPS
