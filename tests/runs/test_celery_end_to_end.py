"""A run end to end: the API queues it, a real Celery worker runs it on the offline model."""

import time
from decimal import Decimal

import pytest

from apps.runs.events import frames_after
from apps.runs.models import Message, RunStep
from apps.spend.models import Ledger, LedgerEntry

from .conftest import wait_for
from .factories import published_agent


@pytest.mark.django_db(transaction=True)
def test_a_run_goes_from_the_api_through_celery_to_completed(
    celery_worker, org, member, client_for
):
    agent = published_agent(org)
    client = client_for(member, org)

    response = client.post(
        "/api/v1/runs/", {"agent_id": agent.pk, "input": "Summarise our week"}, format="json"
    )

    assert response.status_code == 201, response.content
    assert response.json()["status"] == "queued"
    run = wait_for(response.json()["id"])
    assert run.status == "completed", run.error
    assert run.output.startswith('You said "Summarise our week"')
    assert run.model_label == "Offline model" and run.model_provider == "offline"
    assert run.started_at is not None and run.ended_at >= run.started_at
    assert run.request_count == 1
    assert run.input_tokens > 0 and run.output_tokens > 0
    expected = (Decimal(run.input_tokens) * 3 + Decimal(run.output_tokens) * 15) / Decimal(
        1_000_000
    )
    assert run.cost_usd == expected and not run.cost_is_partial
    assert Ledger.objects.get(run=run).cost_usd == run.cost_usd
    assert LedgerEntry.objects.filter(ledger__run=run).count() == 1
    assert RunStep.objects.filter(run=run).count() == 1
    assert run.transcript and run.transcript[0]["kind"] == "request"
    reply = Message.objects.get(run=run, role="assistant")
    assert reply.cost_usd == run.cost_usd and reply.run_status == "completed"

    read = client.get(f"/api/v1/runs/{run.pk}/")
    assert read.status_code == 200
    assert read.json()["status"] == "completed"
    assert Decimal(read.json()["cost_usd"]) == run.cost_usd

    frames = frames_after(run.pk)
    assert [f["seq"] for f in frames] == list(range(1, len(frames) + 1))
    assert frames[0]["type"] == "run_started"
    assert frames[-1]["type"] == "run_finished" and frames[-1]["status"] == "completed"
    assert "".join(f["delta"] for f in frames if f["type"] == "text_delta") == run.output
    assert frames_after(run.pk, after=len(frames) - 1) == [frames[-1]]


@pytest.mark.django_db(transaction=True)
def test_tool_calls_run_in_parallel_through_the_worker(
    celery_worker, org, member, client_for, echo_toolset
):
    agent = published_agent(org, capabilities=[{"id": "planning"}])
    client = client_for(member, org)

    response = client.post(
        "/api/v1/runs/",
        {"agent_id": agent.pk, "input": '/call echo {"text": "one"}\n/call echo {"text": "two"}'},
        format="json",
    )

    run = wait_for(response.json()["id"])
    assert run.status == "completed", run.error
    assert run.output == 'The tools answered: echo returned "echo: one"; echo returned "echo: two".'
    assert run.request_count == 2
    steps = list(RunStep.objects.filter(run=run).values_list("detail__tool_calls", flat=True))
    assert steps == [["echo", "echo"], []]
    frames = frames_after(run.pk)
    assert [f["tool_name"] for f in frames if f["type"] == "tool_call"] == ["echo", "echo"]
    assert sum(1 for f in frames if f["type"] == "cost") == 2


@pytest.mark.django_db(transaction=True)
def test_cancel_stops_a_running_run_which_still_books_what_it_spent(
    celery_worker, org, member, client_for, slow_ping
):
    agent = published_agent(org, capabilities=[{"id": "planning"}], limits={"max_steps": 200})
    client = client_for(member, org)
    run_id = client.post(
        "/api/v1/runs/", {"agent_id": agent.pk, "input": "/steps 100"}, format="json"
    ).json()["id"]
    wait_for(run_id, statuses={"running"})
    # Let it make a couple of requests first.
    deadline = time.monotonic() + 20
    while (
        not LedgerEntry.objects.filter(ledger__run_id=run_id).count() >= 2
        and time.monotonic() < deadline
    ):
        time.sleep(0.05)

    response = client.post(f"/api/v1/runs/{run_id}/cancel/")

    assert response.status_code == 200
    run = wait_for(run_id)
    assert run.status == "cancelled"
    assert run.stop_reason == "cancelled"
    assert 2 <= run.request_count < 100
    assert run.cost_usd > 0 and run.cost_usd == Ledger.objects.get(run=run).cost_usd
    assert run.transcript
    assert Message.objects.get(run=run, role="assistant").run_status == "cancelled"
    assert frames_after(run_id)[-1]["status"] == "cancelled"
