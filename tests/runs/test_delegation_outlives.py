"""Background delegations that outlive the run's answer, and delegations whose run never
continues (docs/delegation.md "A background delegation outlives the answer", "A parked
delegation that never continues").

The inline tests run the real runner in this thread (``execute_run``: the run's life on an
``InlineHost``, which waits for its background delegations to settle after booking the answer);
the worker tests drive a real ``celery worker`` process, where the answer is visible while the
delegation still runs. The only fake is the model provider: the offline model, and the
OpenAI-compatible server on 127.0.0.1 with a latency, for a delegate slower than its parent.
"""

from __future__ import annotations

import datetime as dt
import time
from decimal import Decimal

import pytest
from django.db.models import Sum
from django.utils import timezone

from apps.approvals.models import ToolApproval
from apps.runs import services
from apps.runs.events import frames_after
from apps.runs.models import Message, Run
from apps.runs.runner import execute_run
from apps.runs.services import run_create
from apps.spend.models import Ledger, LedgerEntry
from tests.runs.delegating import ADD, delegating, gated_helper, run_of, task_call
from tests.runs.factories import compatible_profile, published_agent
from tests.runs.fake_openai import FakeOpenAI
from tests.waiting import wait_until_lapsed

SLOW = "/tools 2 read_plan"  # three requests to the fake server: read_plan twice, then an answer


def entries(run: Run, **filters):
    return LedgerEntry.objects.filter(ledger__run=run, **filters)


def total(queryset) -> Decimal:
    return queryset.aggregate(total=Sum("cost_usd"))["total"] or Decimal("0")


def slow_helper(org, server: FakeOpenAI, name="Researcher"):
    # gpt-4o-mini so its requests are priced (the fake server answers any model name).
    profile = compatible_profile(
        org, base_url=server.base_url, model_name="gpt-4o-mini", label=f"{name} model"
    )
    return published_agent(
        org, name=name, model_profile_id=profile.pk, capabilities=[{"id": "planning"}]
    )


def wait_for(predicate, *, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"{what} after {timeout}s")


# --- inline: the real runner on this thread -------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_a_background_delegation_settles_after_the_answer_with_its_own_cost(
    org, member, allow_local_model_requests
):
    with FakeOpenAI(latency=0.4) as server:
        helper = slow_helper(org, server)
        parent = delegating(org, helper, config={"mode": "async"})
        run = run_of(member, org, parent, task_call(SLOW, "researcher"), surface="chat")

    assert run.status == "completed", run.error
    child = Run.objects.get(parent_run=run)
    assert (child.status, child.stop_reason) == ("completed", "answered"), child.error
    # It settled after the parent answered: the parent's answer was booked first.
    assert child.ended_at > run.ended_at
    assert child.request_count == 3
    # Its cost is its own entries, never what the parent spent; the parent row stays the
    # authority — the whole ledger, the late spend included.
    own = total(entries(run, billed_delegation=child.subagent_task_id))
    assert child.cost_usd == own > 0
    parent_own = total(entries(run, delegation=""))
    ledger = Ledger.objects.get(run=run)
    assert run.cost_usd == ledger.cost_usd == parent_own + child.cost_usd
    assert run.request_count == ledger.request_count == 2 + 3
    # The conversation is told, by a turn of the run carrying the late spend: the run's turns
    # still add up to the run.
    turns = Message.objects.filter(run=run, role="assistant").order_by("created_at")
    answer, notice = list(turns)
    assert (
        child.subagent_task_id in notice.content and "settled after this answer" in notice.content
    )
    assert answer.cost_usd + notice.cost_usd == run.cost_usd
    assert notice.cost_usd == child.cost_usd
    # Its frames follow the run's terminal frame on the run's stream.
    kinds = [(f["type"], f.get("task_id")) for f in frames_after(run.pk)]
    finished_at = kinds.index(("run_finished", None))
    assert ("subagent_finished", child.subagent_task_id) in kinds[finished_at:]
    assert ("subagent_recorded", child.subagent_task_id) in kinds[finished_at:]


@pytest.mark.django_db(transaction=True)
def test_the_next_turn_and_the_chat_see_a_result_that_settled_after_the_answer(
    org, member, allow_local_model_requests
):
    from apps.runs.runner import assemble
    from apps.runs.transcript import chat_turns

    with FakeOpenAI(latency=0.3) as server:
        helper = slow_helper(org, server)
        parent = delegating(org, helper, config={"mode": "async"})
        first = run_of(member, org, parent, task_call(SLOW, "researcher"), surface="chat")
    child = Run.objects.get(parent_run=first)
    assert child.ended_at > first.ended_at

    following = run_create(
        actor=member,
        organization=org,
        agent=parent,
        input="what did the researcher find?",
        conversation=first.conversation,
        surface="chat",
    )
    history = assemble(Run.objects.get(pk=following.pk)).message_history
    notice = history[-1].parts[0].content
    assert "not the person's words" in notice and child.subagent_task_id in notice
    # Once: a turn after that one continues a transcript that already holds it.
    execute_run(following.pk)
    third = run_create(
        actor=member,
        organization=org,
        agent=parent,
        input="thanks",
        conversation=first.conversation,
        surface="chat",
    )
    later = assemble(Run.objects.get(pk=third.pk)).message_history
    assert sum("not the person's words" in str(m) for m in later) == 1

    turns = chat_turns(first.conversation)
    turn = [t for t in turns if t["run_id"] == first.pk and t["role"] == "assistant"][0]
    assert turn["cost_usd"] == first.cost_usd
    assert any(
        b["kind"] == "text" and "settled after this answer" in b["text"] for b in turn["blocks"]
    )
    assert [d.pk for d in turn["delegations"]] == [child.pk]


@pytest.mark.django_db(transaction=True)
def test_a_delegates_own_http_client_is_closed_once_its_background_delegation_settled(
    org, member, allow_local_model_requests, monkeypatch
):
    from apps.runs.delegation import scope as delegation
    from apps.runs.modelbuilder import build_model

    handles = []

    def recording_build_model(profile):
        handle = build_model(profile)
        handles.append(handle)
        return handle

    monkeypatch.setattr(delegation, "build_model", recording_build_model)
    with FakeOpenAI(latency=0.2) as server:
        helper = slow_helper(org, server)
        parent = delegating(org, helper, config={"mode": "async"})
        run = run_of(member, org, parent, task_call(SLOW, "researcher"))

    child = Run.objects.get(parent_run=run)
    assert child.status == "completed" and child.ended_at > run.ended_at  # it outlived the answer
    clients = [h.own_client for h in handles if h.own_client is not None]
    assert len(clients) == 1 and clients[0].is_closed()


@pytest.mark.django_db
def test_a_delegate_cancelled_before_it_started_is_a_zero_length_span_at_its_end(org, member):
    from asgiref.sync import async_to_sync
    from pydantic_ai import RunContext
    from pydantic_ai.models.test import TestModel
    from pydantic_ai.usage import RunUsage

    from apps.runs.delegation.booking import book_delegations
    from apps.runs.delegation.lifetime import stop_background
    from apps.runs.delegation.tools import DelegationTools
    from apps.runs.runner import prepare

    helper = published_agent(org, name="Helper")
    parent = delegating(org, helper, config={"mode": "async"})
    run = run_create(actor=member, organization=org, agent=parent, input="go")
    assert services.run_claim_running(run.pk)
    prepared = prepare(Run.objects.get(pk=run.pk))
    runtime = prepared.delegation
    tools = DelegationTools(prepared.resources.delegation)
    ctx = RunContext(deps=None, model=TestModel(), usage=RunUsage(), run_id="parent-run")

    async def start_then_stop():
        started = await tools.task(ctx, "/steps 3", "helper")
        # The run stops before the loop ever ran the delegation's first step.
        await stop_background(runtime)
        return started

    started = async_to_sync(start_then_stop)()
    assert "Task ID:" in started
    book_delegations(run=Run.objects.get(pk=run.pk), runtime=runtime, parking=False)

    child = Run.objects.get(parent_run=run)
    assert (child.status, child.stop_reason) == ("cancelled", "cancelled")
    # Never a null: zero-length, at the moment it ended.
    assert child.started_at is not None and child.started_at == child.ended_at
    assert child.request_count == 0 and child.cost_usd == 0


# --- a parked delegation that never continues ----------------------------------------------------


@pytest.mark.django_db
def test_a_parked_delegation_whose_approval_expired_keeps_an_honest_row(org, member):
    from apps.approvals.services import approvals_expire_stale

    mailer = gated_helper(org)
    middle = delegating(org, mailer, name="Coordinator")
    parent = delegating(org, middle, config={"max_depth": 2})
    run = run_of(member, org, parent, task_call(task_call(ADD, "mailer"), "coordinator"))
    assert run.status == "awaiting_approval", run.error
    tree = run.paused_state["delegates"]
    coordinator_task = tree[0]["task_id"]
    mailer_task = tree[0]["delegates"][0]["task_id"]

    approvals_expire_stale(now=timezone.now() + dt.timedelta(hours=73))

    run.refresh_from_db()
    assert run.status == "cancelled"
    coordinator = Run.objects.get(parent_run=run)
    mailer_row = Run.objects.get(parent_run=coordinator)
    for row, task_id in ((coordinator, coordinator_task), (mailer_row, mailer_task)):
        assert row.subagent_task_id == task_id
        assert (row.status, row.stop_reason) == ("cancelled", "cancelled")
        assert row.error == run.error  # the sentence that ended the run
        # Its own entries (every segment's), its span from its start to when it parked.
        assert row.cost_usd == total(entries(run, billed_delegation=task_id)) > 0
        assert row.request_count == entries(run, billed_delegation=task_id).count()
        assert run.started_at <= row.started_at <= row.ended_at <= run.ended_at
    assert mailer_row.agent_id == mailer.pk and coordinator.agent_id == middle.pk
    assert run.cost_usd == total(entries(run))


@pytest.mark.django_db
def test_cancelling_a_run_parked_inside_a_delegation_books_the_delegations_row(org, member):
    mailer = gated_helper(org)
    parent = delegating(org, mailer)
    run = run_of(member, org, parent, task_call(ADD, "mailer"))
    assert run.status == "awaiting_approval", run.error
    task_id = run.paused_state["delegates"][0]["task_id"]

    services.run_cancel(actor=member, run=run)

    run.refresh_from_db()
    row = Run.objects.get(parent_run=run)
    assert run.status == "cancelled"
    assert (row.status, row.subagent_task_id) == ("cancelled", task_id)
    assert row.error == "The run was cancelled while this delegation was parked."
    assert row.cost_usd == total(entries(run, billed_delegation=task_id)) > 0
    assert ToolApproval.objects.get(run=run).delegate_name == "mailer"


# --- a real worker process ---------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_on_a_worker_the_answer_is_booked_while_its_background_delegation_still_runs(org, member):
    from tests.runs.worker import serving_worker

    with FakeOpenAI(latency=1.0) as server:
        helper = slow_helper(org, server)
        parent = delegating(org, helper, config={"mode": "async"})
        with serving_worker(runs_per_worker=5) as worker:
            run = run_create(
                actor=member,
                organization=org,
                agent=parent,
                input=task_call(SLOW, "researcher"),
                surface="chat",
            )
            answered = wait_for(
                lambda: Run.objects.filter(pk=run.pk, status="completed").first(),
                timeout=30,
                what=f"the parent did not answer: {worker.log[-3000:]}",
            )
            # The delegation outlives the answer: its row is running, under a lease.
            running = wait_for(
                lambda: Run.objects.filter(parent_run=run, status="running").first(),
                timeout=10,
                what="no running row for the background delegation",
            )
            assert running.lease_expires_at is not None and running.ended_at is None
            assert answered.cost_usd == total(entries(run, delegation=""))  # its own, so far
            child = wait_for(
                lambda: Run.objects.filter(pk=running.pk, status="completed").first(),
                timeout=30,
                what=f"the delegation did not settle: {worker.log[-3000:]}",
            )

    run.refresh_from_db()
    assert child.ended_at > run.ended_at and child.request_count == 3
    assert child.cost_usd == total(entries(run, billed_delegation=child.subagent_task_id)) > 0
    # The late spend lands on the parent row, exactly: not absorbed into or from the delegate.
    assert (
        run.cost_usd == answered.cost_usd + child.cost_usd == Ledger.objects.get(run=run).cost_usd
    )
    notice = Message.objects.filter(run=run, role="assistant").order_by("created_at").last()
    assert notice.cost_usd == child.cost_usd and child.subagent_task_id in notice.content


@pytest.mark.django_db(transaction=True)
def test_cancelling_the_answered_run_cancels_its_background_delegation(org, member):
    from tests.runs.worker import serving_worker

    with FakeOpenAI(latency=1.0) as server:
        helper = slow_helper(org, server)
        parent = delegating(org, helper, config={"mode": "async"})
        with serving_worker(runs_per_worker=5) as worker:
            run = run_create(
                actor=member,
                organization=org,
                agent=parent,
                input=task_call("/tools 20 read_plan", "researcher"),
            )
            running = wait_for(
                lambda: Run.objects.filter(parent_run=run, status="running").first(),
                timeout=30,
                what=f"no running delegation: {worker.log[-3000:]}",
            )
            assert Run.objects.get(pk=run.pk).status == "completed"

            services.run_cancel(actor=member, run=Run.objects.get(pk=run.pk))

            child = wait_for(
                lambda: Run.objects.filter(pk=running.pk, status="cancelled").first(),
                timeout=10,
                what=f"the delegation was not cancelled: {worker.log[-3000:]}",
            )

    run.refresh_from_db()
    assert run.status == "completed"  # its answer stands
    assert child.request_count < 21
    assert child.cost_usd == total(entries(run, billed_delegation=child.subagent_task_id))
    assert run.cost_usd == Ledger.objects.get(run=run).cost_usd


@pytest.mark.django_db(transaction=True)
def test_cancelling_the_answered_run_cancels_an_inline_specialist_still_running(org, member):
    # An inline specialist has no row; the finished run holds a lease while it outlives the
    # answer, which is what a cancel of the run finds.
    from tests.runs.worker import serving_worker

    with FakeOpenAI(latency=1.0) as server:
        profile = compatible_profile(org, base_url=server.base_url, model_name="gpt-4o-mini")
        specialist = {
            "name": "researcher",
            "description": "Looks things up.",
            "instructions": "You look things up.",
            "model_profile_id": str(profile.pk),
        }
        parent = delegating(
            org,
            config={"mode": "async", "inline": [specialist], "share_with_delegates": ["planning"]},
            capabilities=[{"id": "planning"}],
        )
        with serving_worker(runs_per_worker=5) as worker:
            run = run_create(
                actor=member,
                organization=org,
                agent=parent,
                input=task_call("/tools 20 read_plan", "researcher"),
            )
            holding = wait_for(
                lambda: Run.objects.filter(
                    pk=run.pk, status="completed", lease_expires_at__isnull=False
                ).first(),
                timeout=30,
                what=f"the run did not answer while its specialist ran: {worker.log[-3000:]}",
            )
            wait_for(
                lambda: entries(run).exclude(delegation="").count() >= 1,
                timeout=20,
                what="the specialist made no request",
            )

            services.run_cancel(actor=member, run=holding)

            wait_for(
                lambda: Run.objects.filter(pk=run.pk, lease_expires_at__isnull=True).exists(),
                timeout=15,
                what=f"the specialist was not stopped: {worker.log[-3000:]}",
            )

    run.refresh_from_db()
    assert run.status == "completed" and not Run.objects.filter(parent_run=run).exists()
    closing = [f for f in frames_after(run.pk) if f["type"] == "subagent_finished"]
    assert [f["status"] for f in closing] == ["cancelled"]
    assert entries(run).exclude(delegation="").count() < 21
    # Its spend stays where it was booked; the run row carries the whole ledger.
    assert run.cost_usd == Ledger.objects.get(run=run).cost_usd == total(entries(run))


@pytest.mark.django_db(transaction=True)
def test_a_dead_workers_outliving_delegation_is_ended_by_the_lease_sweep(org, member):
    from tests.runs.worker import serving_worker

    with FakeOpenAI(latency=0.5) as server:
        helper = slow_helper(org, server)
        parent = delegating(org, helper, config={"mode": "async"})
        with serving_worker(runs_per_worker=5, env={"RUN_LEASE_SECONDS": "3"}) as worker:
            run = run_create(
                actor=member,
                organization=org,
                agent=parent,
                input=task_call("/tools 40 read_plan", "researcher"),
            )
            running = wait_for(
                lambda: Run.objects.filter(parent_run=run, status="running").first(),
                timeout=30,
                what=f"no running delegation: {worker.log[-3000:]}",
            )
            wait_for(
                lambda: entries(run, billed_delegation=running.subagent_task_id).count() >= 2,
                timeout=20,
                what="the delegation made no requests",
            )
            worker.kill()

    wait_until_lapsed([running.pk])  # its lease lapses
    assert services.runs_sweep_lapsed_leases() == 1
    child = Run.objects.get(pk=running.pk)
    run.refresh_from_db()
    assert (child.status, child.stop_reason) == ("failed", "worker_lost")
    spent = entries(run, billed_delegation=child.subagent_task_id)
    assert child.request_count == spent.count() >= 2
    assert child.cost_usd == total(spent) and child.cost_is_partial
    # The parent row catches up with its whole ledger.
    assert run.cost_usd == Ledger.objects.get(run=run).cost_usd == total(entries(run))
