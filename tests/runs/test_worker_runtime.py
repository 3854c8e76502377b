"""Many runs in one real worker process (docs/runner.md "Many runs per worker").

Each test starts `celery worker --pool threads` as `agenticos up` does, in a process of its own,
and drives it through the service the API calls. The only fake is the model provider: the
OpenAI-compatible server on 127.0.0.1 (tests/runs/fake_openai.py), with a fixed latency.
"""

from __future__ import annotations

import time
from decimal import Decimal

import pytest
from django.utils import timezone

from apps.agents.models import ModelProfile
from apps.runs import services
from apps.runs.choices import TERMINAL_STATUSES
from apps.runs.models import Run
from apps.spend.models import BudgetCounter, Ledger, LedgerEntry
from tests.waiting import wait_until, wait_until_lapsed

from .factories import book_spend, compatible_profile, published_agent, queued_run
from .fake_openai import FakeOpenAI
from .worker import ConnectionPeak, serving_worker

# The bound: a worker process's PostgreSQL connections, however many runs it holds.
MAX_WORKER_CONNECTIONS = 10


def _asks(body: dict, text: str) -> bool:
    """A chat-completions request whose conversation carries ``text``."""
    return any(text in str(message.get("content")) for message in body.get("messages", []))


def wait_all(run_ids, *, timeout: float) -> list[Run]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        runs = list(Run.objects.filter(pk__in=run_ids))
        if all(run.status in TERMINAL_STATUSES for run in runs):
            return runs
        time.sleep(0.1)
    unfinished = Run.objects.filter(pk__in=run_ids).exclude(status__in=TERMINAL_STATUSES)
    raise AssertionError(
        f"{unfinished.count()} runs unfinished after {timeout}s: {list(unfinished.values_list('status', flat=True))[:5]}"
    )


def wait_status(run_id, status: str, *, timeout: float) -> Run:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run = Run.objects.get(pk=run_id)
        if run.status == status:
            return run
        time.sleep(0.02)
    raise AssertionError(f"run {run_id} still {Run.objects.get(pk=run_id).status} after {timeout}s")


def compatible_agent(org, server: FakeOpenAI, model_name="local-model", **profile):
    profile = compatible_profile(org, base_url=server.base_url, model_name=model_name, **profile)
    return published_agent(org, model_profile_id=profile.pk, name=f"On {model_name}")


@pytest.fixture
def provider():
    with FakeOpenAI(latency=1.0) as server:
        yield server


@pytest.mark.django_db(transaction=True)
def test_a_hundred_concurrent_runs_complete_in_one_worker_process_with_their_ledgers(
    org, member, provider
):
    agent = compatible_agent(org, provider)
    with serving_worker(runs_per_worker=100) as worker, ConnectionPeak(worker) as connections:
        started = time.monotonic()
        runs = [queued_run(member, org, agent, f"question {n}") for n in range(100)]
        finished = wait_all([run.pk for run in runs], timeout=60)
        elapsed = time.monotonic() - started

    assert {run.status for run in finished} == {"completed"}, {run.error for run in finished}
    # One after another they would take 100 s; side by side, a few provider latencies.
    assert elapsed < 20, f"100 runs of one 1.0 s request took {elapsed:.1f}s"
    for run in finished:
        ledger = Ledger.objects.get(run=run)
        assert run.request_count == ledger.request_count == 1
        assert run.cost_usd == ledger.cost_usd and run.lease_expires_at is None
    assert LedgerEntry.objects.filter(ledger__run__in=runs).count() == 100
    assert 0 < connections.peak <= MAX_WORKER_CONNECTIONS, connections.peak


@pytest.mark.django_db(transaction=True)
def test_the_strict_cap_holds_with_all_its_runs_in_one_worker_process(org, member):
    """tests/spend/test_concurrency.py's first case, with every run on one worker's event loop."""
    org.monthly_budget_usd = Decimal("1")
    org.save(update_fields=["monthly_budget_usd"])
    agent = published_agent(org)
    earlier = queued_run(member, org, agent, "earlier")
    book_spend(earlier, Decimal("0.9998"))  # less headroom than one request costs
    Run.objects.filter(pk=earlier.pk).update(status="completed")
    with serving_worker(runs_per_worker=50):
        runs = [queued_run(member, org, agent, f"run {n}") for n in range(30)]
        finished = wait_all([run.pk for run in runs], timeout=60)

    statuses = sorted(run.status for run in finished)
    assert statuses.count("completed") == 1, statuses
    assert statuses.count("budget_exceeded") == 29
    assert LedgerEntry.objects.filter(ledger__run__in=runs).count() == 1
    counter = BudgetCounter.objects.get(organization=org, scope="organization")
    assert counter.reserved_usd == 0
    one_request = LedgerEntry.objects.get(ledger__run__in=runs).cost_usd
    assert counter.committed_usd <= Decimal("1") + one_request


@pytest.mark.django_db(transaction=True)
def test_cancel_of_one_run_among_fifty_leaves_the_others_untouched(org, member):
    with FakeOpenAI(latency=3.0) as slow:
        agent = compatible_agent(org, slow)
        with serving_worker(runs_per_worker=50):
            runs = [queued_run(member, org, agent, f"question {n}") for n in range(50)]
            target = runs[17]
            wait_status(target.pk, "running", timeout=30)
            # Its request is in flight: the fake model has received it (and answers 3 s later).
            wait_until(
                lambda: any(_asks(body, "question 17") for body in slow.requests),
                timeout=30,
                what="run 17's request reaching the model",
            )
            asked = timezone.now()
            services.run_cancel(actor=member, run=Run.objects.get(pk=target.pk))
            cancelled = wait_status(target.pk, "cancelled", timeout=10)
            finished = wait_all([run.pk for run in runs], timeout=60)

    # The worker's watcher looks every 0.25 s and the booking follows at once (measured: 0.3 s);
    # the bound leaves room for a machine shared with other suites.
    assert (cancelled.ended_at - asked).total_seconds() < 1.0, cancelled.ended_at - asked
    assert cancelled.stop_reason == "cancelled" and cancelled.error == "The run was cancelled."
    others = [run for run in finished if run.pk != target.pk]
    assert {run.status for run in others} == {"completed"}
    assert all(
        run.request_count == Ledger.objects.get(run=run).request_count == 1 for run in others
    )
    assert all(run.cancel_requested_at is None for run in others)


@pytest.mark.django_db(transaction=True)
def test_a_hung_provider_ends_its_run_failed_at_the_timeout_while_others_complete(org, member):
    with FakeOpenAI(latency=0.5) as server:
        stuck_profile = ModelProfile.objects.create(
            organization=org,
            label="Stuck",
            provider="openai_compatible",
            model_name="stuck-hang",
            base_url=server.base_url,
            request_timeout_seconds=2,
        )
        hung_agent = published_agent(org, model_profile_id=stuck_profile.pk, name="Stuck")
        agent = compatible_agent(org, server)
        with serving_worker(runs_per_worker=50):
            hung = queued_run(member, org, hung_agent, "anyone there?")
            others = [queued_run(member, org, agent, f"question {n}") for n in range(10)]
            finished = {
                run.pk: run for run in wait_all([hung.pk, *(run.pk for run in others)], timeout=60)
            }

    stuck = finished[hung.pk]
    assert stuck.status == "failed" and stuck.stop_reason == "provider_error"
    assert (
        stuck.error
        == "The model provider did not answer within 2 seconds (the model profile's request timeout)."
    )
    assert 2 <= (stuck.ended_at - stuck.started_at).total_seconds() < 6
    assert all(finished[run.pk].status == "completed" for run in others)
    # The others were not held behind it: they ended before its timeout did.
    assert max(finished[run.pk].ended_at for run in others) < stuck.ended_at


@pytest.mark.django_db(transaction=True)
def test_a_sigkilled_workers_runs_are_ended_by_the_lease_sweep_with_their_committed_spend(
    org, member
):
    agent = published_agent(org, limits={"max_steps": 500})
    with serving_worker(runs_per_worker=10, env={"RUN_LEASE_SECONDS": "3"}) as worker:
        swept = queued_run(member, org, agent, "/steps 499")
        cancelled = queued_run(member, org, agent, "/steps 499")
        for run in (swept, cancelled):
            wait_status(run.pk, "running", timeout=30)
        deadline = time.monotonic() + 30
        while Ledger.objects.filter(run__in=[swept, cancelled], request_count__gte=3).count() < 2:
            assert time.monotonic() < deadline, (
                list(
                    Run.objects.filter(pk__in=[swept.pk, cancelled.pk]).values(
                        "status", "error", "request_count"
                    )
                ),
                list(Ledger.objects.filter(run__in=[swept, cancelled]).values("request_count")),
                worker.log[-3000:],
            )
            time.sleep(0.01)
        worker.kill()
        killed_at = timezone.now()

    # Nothing a dead worker could write: still running, nothing on the row.
    row = Run.objects.get(pk=swept.pk)
    assert row.status == "running" and row.cost_usd == 0
    # Before the lease lapses, the sweep leaves it alone (the worker might only be slow).
    assert services.runs_sweep_lapsed_leases(now=killed_at) == 0

    # The lease (3 s here, 45 s by default) lapses: wait for that moment itself.
    wait_until_lapsed([swept.pk, cancelled.pk])
    # A cancel of a run whose worker is gone ends it at once, with what it spent.
    services.run_cancel(actor=member, run=Run.objects.get(pk=cancelled.pk))
    ended = Run.objects.get(pk=cancelled.pk)
    ledger = Ledger.objects.get(run=cancelled)
    assert (
        ended.status == "cancelled"
        and ended.error == "The run was cancelled; the worker running it had stopped."
    )
    assert ended.cost_usd == ledger.cost_usd > 0 and ended.request_count == ledger.request_count

    assert services.runs_sweep_lapsed_leases() == 1
    failed = Run.objects.get(pk=swept.pk)
    ledger = Ledger.objects.get(run=swept)
    assert failed.status == "failed" and failed.stop_reason == "worker_lost"
    assert failed.error.startswith("The worker running this run stopped")
    # Every request committed before the kill is on the row: a floor, marked partial.
    assert (
        failed.request_count
        == ledger.request_count
        == LedgerEntry.objects.filter(ledger=ledger).count()
        >= 3
    )
    assert failed.cost_usd == ledger.cost_usd > 0 and failed.cost_is_partial
    assert (failed.ended_at - killed_at).total_seconds() < 60
    # The dead run's reservation is no longer held on the counters.
    assert BudgetCounter.objects.get(organization=org, scope="organization").reserved_usd == 0
