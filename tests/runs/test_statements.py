"""A worker's statements per run (apps/runs/claiming.py, apps/runs/finishing.py): the claim reads in
one round trip everything preparing the run needs, and the end writes the run, its steps and its
turn in one. Django compiling these per run cost more CPU than the run's governance did, so the
count is held here (docs/runner.md, "Each run's statements written once")."""

from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from apps.runs.choices import MessageRole, RunStatus
from apps.runs.finishing import Step, finish
from apps.runs.models import Message, Run, RunStep
from apps.runs.runner import execute_run
from apps.runs.services import run_cancel, run_claim_running, run_create
from apps.spend.models import Ledger
from apps.vault.services import secret_create

from .factories import compatible_profile, published_agent
from .fake_openai import FakeOpenAI

TRANSACTION_CONTROL = ("BEGIN", "COMMIT", "SAVEPOINT", "RELEASE")


@pytest.fixture
def provider():
    with FakeOpenAI() as server:
        yield server


def _agent(org, owner, provider):
    key = secret_create(
        actor=owner,
        organization=org,
        name="local key",
        purpose="openai_compatible",
        value="sk-local-test",
    )
    profile = compatible_profile(
        org, base_url=provider.base_url, model_name="local-model", secret=key
    )
    return published_agent(org, model_profile_id=profile.pk), profile


@pytest.mark.django_db(transaction=True)
def test_a_one_request_run_sends_four_statements_besides_begin_and_commit(
    org, owner, member, provider, allow_local_model_requests
):
    agent, _ = _agent(org, owner, provider)
    execute_run(run_create(actor=member, organization=org, agent=agent, input="warm up").pk)
    run = run_create(actor=member, organization=org, agent=agent, input="hello")

    with CaptureQueriesContext(connection) as queries:
        assert execute_run(run.pk) == RunStatus.COMPLETED

    sent = [q["sql"] for q in queries if not q["sql"].startswith(TRANSACTION_CONTROL)]
    # The claim; the ledger opened and the month's counters read; the end — and, since the
    # transcript answered, nothing else (the guard's statements go on the loop's own session).
    assert len(sent) == 4, "\n".join(sql[:90] for sql in sent)
    finished = Run.objects.get(pk=run.pk)
    assert finished.request_count == 1 and finished.output
    turn = Message.objects.get(run=run, role=MessageRole.ASSISTANT)
    assert turn.cost_usd == finished.cost_usd and turn.run_status == RunStatus.COMPLETED
    assert list(RunStep.objects.filter(run=run).values_list("number", flat=True)) == [1]


@pytest.mark.django_db(transaction=True)
def test_the_claim_reads_the_runs_rows_its_profile_and_the_previous_turn_at_once(
    org, owner, member, provider, allow_local_model_requests
):
    agent, profile = _agent(org, owner, provider)
    first = run_create(actor=member, organization=org, agent=agent, input="first turn")
    execute_run(first.pk)
    second = run_create(
        actor=member, organization=org, agent=agent, input="second", conversation=first.conversation
    )

    claimed = run_claim_running(second.pk)

    assert claimed is not None and claimed.run.status == RunStatus.RUNNING
    assert claimed.run.started_at is not None and claimed.run.lease_expires_at is not None
    assert claimed.previous.transcript == Run.objects.get(pk=first.pk).transcript
    assert claimed.previous.created_at == first.created_at
    assert claimed.model_profile.pk == profile.pk
    with CaptureQueriesContext(connection) as reads:
        run = claimed.run
        assert run.agent_version.agent.organization.pk == org.pk
        assert run.agent_version.published_by is None
        assert run.conversation.pk == first.conversation_id
        assert getattr(run, "ledger", None) is None  # none yet: known, not asked
        assert claimed.model_profile.secret.name == "local key"
    assert len(reads) == 0
    # A claimed run is not claimed twice.
    assert run_claim_running(second.pk) is None


@pytest.mark.django_db(transaction=True)
def test_a_conversations_first_turn_has_no_previous_turn(org, owner, member, provider):
    agent, _ = _agent(org, owner, provider)
    run = run_create(actor=member, organization=org, agent=agent, input="hello")

    claimed = run_claim_running(run.pk)

    assert claimed.previous.transcript is None and claimed.previous.created_at is None


@pytest.mark.django_db(transaction=True)
def test_a_run_whose_cancel_was_asked_is_not_claimed(org, owner, member, provider):
    agent, _ = _agent(org, owner, provider)
    run = run_create(actor=member, organization=org, agent=agent, input="hello")
    run_cancel(actor=member, run=run)

    assert run_claim_running(run.pk) is None
    assert Run.objects.get(pk=run.pk).status == RunStatus.CANCELLED


@pytest.mark.django_db(transaction=True)
def test_a_resumed_runs_steps_follow_its_earlier_ones_and_its_turn_costs_only_what_is_new(
    org, owner, member, provider, allow_local_model_requests
):
    agent, _ = _agent(org, owner, provider)
    run = run_create(actor=member, organization=org, agent=agent, input="hello")
    execute_run(run.pk)
    # As if it had parked after that segment and a second one now ends it: the ledger's totals
    # are the run's, the earlier turn claims its share already.
    Run.objects.filter(pk=run.pk).update(status=RunStatus.RUNNING, ended_at=None)
    Ledger.objects.filter(run=run).update(cost_usd=Decimal("0.0300"), request_count=2)
    Message.objects.filter(run=run, role=MessageRole.ASSISTANT).update(cost_usd=Decimal("0.0100"))

    finished = finish(
        run.pk,
        to_status=RunStatus.COMPLETED,
        fields={
            "stop_reason": "answered",
            "error": "",
            "budget_refusal": None,
            "output": "second segment",
            "ended_at": timezone.now(),
        },
        steps=[Step({"model": "local-model"}, 5, 7, Decimal("0.0200"))],
        content="second segment",
        context_tokens=5,
        now=timezone.now(),
    )

    assert finished.cost_usd == Decimal("0.0300") and finished.request_count == 2
    assert list(
        RunStep.objects.filter(run=run).order_by("number").values_list("number", flat=True)
    ) == [1, 2]
    turns = Message.objects.filter(run=run, role=MessageRole.ASSISTANT).order_by("created_at", "pk")
    assert [turn.cost_usd for turn in turns] == [Decimal("0.0100"), Decimal("0.0200")]
    # The messages of a run sum to the run (seed 003).
    assert sum(turn.cost_usd for turn in turns) == finished.cost_usd
