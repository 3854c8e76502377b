"""The run state machine: the transition table in apps/runs/choices.py, enforced by every claim."""

import pytest
from django.utils import timezone

from apps.runs import services, states
from apps.runs.choices import (
    PARKED_STATUSES,
    RUN_TRANSITIONS,
    TERMINAL_STATUSES,
    RunStatus,
    StopReason,
)
from apps.runs.models import Run

from .factories import published_agent, queued_run


def test_every_status_has_its_row_in_the_transition_table():
    assert set(RUN_TRANSITIONS) == set(RunStatus.values)
    for status, targets in RUN_TRANSITIONS.items():
        assert targets <= set(RunStatus.values), status


def test_a_terminal_run_moves_nowhere():
    for status in TERMINAL_STATUSES - {RunStatus.FAILED}:
        assert RUN_TRANSITIONS[status] == frozenset(), status
    # A failed run moves only when a sweep failed it while its worker was alive (run_finish).
    assert RunStatus.RUNNING not in RUN_TRANSITIONS[RunStatus.FAILED]
    assert RunStatus.QUEUED not in RUN_TRANSITIONS[RunStatus.FAILED]


def test_a_parked_run_only_resumes_or_is_cancelled():
    for status in PARKED_STATUSES:
        assert RUN_TRANSITIONS[status] == {RunStatus.RUNNING, RunStatus.CANCELLED}


@pytest.mark.django_db
def test_an_illegal_transition_is_refused_and_the_row_is_left_alone(org, member):
    run = queued_run(member, org, published_agent(org))
    Run.objects.filter(pk=run.pk).update(status=RunStatus.COMPLETED)

    with pytest.raises(states.IllegalTransition) as refused:
        states.claim(run.pk, from_statuses=[RunStatus.COMPLETED], to_status=RunStatus.RUNNING)

    assert "completed to running" in str(refused.value)
    assert Run.objects.get(pk=run.pk).status == RunStatus.COMPLETED


@pytest.mark.django_db
def test_a_queued_run_cannot_park_without_running_first(org, member):
    run = queued_run(member, org, published_agent(org))

    with pytest.raises(states.IllegalTransition):
        states.claim(
            run.pk, from_statuses=[RunStatus.QUEUED], to_status=RunStatus.AWAITING_APPROVAL
        )
    assert Run.objects.get(pk=run.pk).status == RunStatus.QUEUED


@pytest.mark.django_db
def test_a_claim_from_a_status_the_run_already_left_moves_nothing(org, member):
    run = queued_run(member, org, published_agent(org))

    moved = states.claim(
        run.pk,
        from_statuses=[RunStatus.RUNNING],
        to_status=RunStatus.COMPLETED,
        stop_reason=StopReason.ANSWERED,
    )

    assert moved is False
    assert Run.objects.get(pk=run.pk).status == RunStatus.QUEUED


@pytest.mark.django_db
def test_an_expired_wait_cancels_only_a_run_still_parked_on_it(org, member):
    run = queued_run(member, org, published_agent(org))
    Run.objects.filter(pk=run.pk).update(status=RunStatus.AWAITING_ANSWER)
    now = timezone.now()

    # Waiting on an answer, not an approval: the approval sweep's expiry leaves it alone.
    assert not services.run_expire_parked(
        run_id=run.pk, waiting_for="approval", sentence="late", after_hours=1, now=now
    )
    assert services.run_expire_parked(
        run_id=run.pk, waiting_for="question", sentence="late", after_hours=1, now=now
    )
    run.refresh_from_db()
    assert (run.status, run.stop_reason, run.error, run.ended_at) == (
        RunStatus.CANCELLED,
        StopReason.CANCELLED,
        "late",
        now,
    )
