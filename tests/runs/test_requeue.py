"""The requeue sweep (apps/runs/requeue.py): a run committed ``queued`` whose task never reached a
worker is sent again, a duplicate delivery executes nothing twice, a run its creator holds back is
left alone, and a run no worker ever takes ends ``undelivered`` with a sentence. Against the real
database, Redis and a Celery worker; the broker outage is a real one (a port nobody listens on)."""

from __future__ import annotations

import datetime as dt
import socket
from contextlib import contextmanager

import pytest
from django.db import transaction

from agenticos.celery import app as celery_app
from agenticos.schedule import SCHEDULE, single_flight
from apps.runs import queue, services
from apps.runs.models import Message, Run, RunStep
from apps.runs.requeue import RUN_REQUEUE_LIMIT, resend_due_after, runs_requeue
from apps.runs.tasks import requeue_queued_runs
from apps.spend.models import Ledger, LedgerEntry

from .conftest import wait_for, worker_drained
from .factories import published_agent

AFTER = 30


@pytest.fixture(autouse=True)
def _requeue_after(settings):
    settings.RUN_REQUEUE_AFTER_SECONDS = AFTER


@contextmanager
def broker_down():
    """Tasks are published to a port nobody listens on while open: what a Redis outage longer
    than the publish retries looks like to the sender. The worker's own connection is untouched."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    previous = celery_app.conf.broker_write_url
    celery_app.conf.broker_write_url = f"redis://127.0.0.1:{port}/0"
    _drop_producer_pools()
    try:
        yield
    finally:
        celery_app.conf.broker_write_url = previous
        _drop_producer_pools()


def _drop_producer_pools() -> None:
    # Celery caches its connection and producer pools on the app (as after a fork, it rebuilds them).
    celery_app._pool = None
    celery_app.amqp._producer_pool = None


def _held_run(org, agent, member) -> Run:
    """A run its creator drives (as a trigger's fire does): created with ``enqueue=False``."""
    with transaction.atomic():
        return services.run_create(
            actor=member, organization=org, agent=agent, input="held", enqueue=False
        )


@pytest.mark.django_db(transaction=True)
def test_an_enqueue_the_broker_refused_answers_201_and_the_sweep_delivers_the_run(
    celery_worker, org, member, client_for, caplog
):
    agent = published_agent(org)
    client = client_for(member, org)
    held = _held_run(org, agent, member)

    with broker_down(), caplog.at_level("WARNING", logger="apps.runs.services"):
        response = client.post(
            "/api/v1/runs/", {"agent_id": agent.pk, "input": "Still there?"}, format="json"
        )

    # The publish really failed (after its retries), and after the commit.
    assert "not enqueued" in caplog.text, caplog.text
    # The row committed: the answer is the run, queued, not a 503 that invites a second run.
    assert response.status_code == 201, response.content
    assert response.json()["status"] == "queued"
    run = Run.objects.get(pk=response.json()["id"])
    assert run.status == "queued" and run.on_queue and run.requeue_count == 0

    # Not yet due: nothing is sent.
    assert runs_requeue(now=run.created_at + dt.timedelta(seconds=AFTER - 1)) == 0
    worker_drained()
    assert Run.objects.get(pk=run.pk).status == "queued"

    # Due: its task is sent again and the worker runs it; the held run is left to its creator.
    assert runs_requeue(now=run.created_at + dt.timedelta(seconds=AFTER + 1)) == 1
    finished = wait_for(run.pk)
    assert finished.status == "completed", finished.error
    assert finished.requeue_count == 1
    held.refresh_from_db()
    assert held.status == "queued" and held.requeue_count == 0 and not held.on_queue


@pytest.mark.django_db(transaction=True)
def test_two_deliveries_of_one_run_execute_it_once_with_one_ledger(celery_worker, org, member):
    agent = published_agent(org)
    run = _held_run(org, agent, member)

    # What a re-send racing the original message looks like to the worker: two deliveries.
    queue.enqueue(queue.EXECUTE_RUN, run.pk)
    queue.enqueue(queue.EXECUTE_RUN, run.pk)
    worker_drained()

    run.refresh_from_db()
    assert run.status == "completed", run.error
    assert run.request_count == 1
    assert Ledger.objects.filter(run=run).count() == 1
    assert LedgerEntry.objects.filter(ledger__run=run).count() == 1
    assert RunStep.objects.filter(run=run).count() == 1
    assert Message.objects.filter(run=run, role="assistant").count() == 1


@pytest.mark.django_db(transaction=True)
def test_re_sends_wait_twice_as_long_each_time(celery_worker, org, member):
    agent = published_agent(org)
    run = _held_run(org, agent, member)
    # A run put on the broker whose first re-send went out and was lost again.
    Run.objects.filter(pk=run.pk).update(on_queue=True, requeue_count=1)
    due = resend_due_after(AFTER, 1)
    assert due == dt.timedelta(seconds=3 * AFTER)

    assert runs_requeue(now=run.created_at + due - dt.timedelta(seconds=1)) == 0
    worker_drained()
    assert Run.objects.get(pk=run.pk).status == "queued"

    assert runs_requeue(now=run.created_at + due) == 1
    finished = wait_for(run.pk)
    assert finished.status == "completed", finished.error
    assert finished.requeue_count == 2


@pytest.mark.django_db(transaction=True)
def test_a_run_no_worker_takes_after_the_last_re_send_fails_undelivered(
    celery_worker, org, member, client_for
):
    agent = published_agent(org)
    run = _held_run(org, agent, member)
    Run.objects.filter(pk=run.pk).update(on_queue=True, requeue_count=RUN_REQUEUE_LIMIT)
    due = resend_due_after(AFTER, RUN_REQUEUE_LIMIT)

    assert runs_requeue(now=run.created_at + due - dt.timedelta(seconds=1)) == 0
    assert Run.objects.get(pk=run.pk).status == "queued"

    # Past the limit nothing more is sent: the run ends, and says why.
    assert runs_requeue(now=run.created_at + due) == 0
    worker_drained()
    body = client_for(member, org).get(f"/api/v1/runs/{run.pk}/").json()
    assert body["status"] == "failed" and body["stop_reason"] == "undelivered"
    assert body["error"].startswith("No worker took this run")
    assert f"sent {RUN_REQUEUE_LIMIT + 1} times" in body["error"]
    assert Run.objects.get(pk=run.pk).requeue_count == RUN_REQUEUE_LIMIT


@pytest.mark.django_db(transaction=True)
def test_the_sweep_is_off_at_zero(settings, org, member):
    settings.RUN_REQUEUE_AFTER_SECONDS = 0
    agent = published_agent(org)
    run = _held_run(org, agent, member)
    Run.objects.filter(pk=run.pk).update(on_queue=True)

    assert runs_requeue(now=run.created_at + dt.timedelta(days=1)) == 0
    assert Run.objects.get(pk=run.pk).status == "queued"


@pytest.mark.django_db(transaction=True)
def test_the_sweep_is_declared_like_the_others_and_runs_single_flight(org, member):
    [job] = [j for j in SCHEDULE if j.task == "apps.runs.tasks.requeue_queued_runs"]
    assert job.task in celery_app.tasks
    assert job.expires_seconds < job.every_seconds and job.every_seconds < AFTER

    agent = published_agent(org)
    run = _held_run(org, agent, member)
    Run.objects.filter(pk=run.pk).update(
        on_queue=True,
        requeue_count=RUN_REQUEUE_LIMIT,
        created_at=run.created_at - dt.timedelta(days=1),
    )
    # Another beat's sweep holds the lock: this one does nothing.
    with single_flight("runs.requeue_queued_runs", 60) as acquired:
        assert acquired
        assert requeue_queued_runs() == 0
        assert Run.objects.get(pk=run.pk).status == "queued"
    # With the lock free, the task sweeps (here: the run past its last re-send fails).
    requeue_queued_runs()
    assert Run.objects.get(pk=run.pk).stop_reason == "undelivered"
