"""The stale-run reaper: ends what a dead worker left behind; a live run's later write wins."""

import datetime as dt
from decimal import Decimal

import pytest
from django.utils import timezone

from apps.runs.choices import RunStatus, StopReason
from apps.runs.models import Run
from apps.runs.runner import Outcome
from apps.runs.services import run_finish, runs_reap_stale
from apps.runs.tasks import reap_stale_runs
from apps.spend.models import BudgetCounter

from .factories import book_spend, published_agent, queued_run


def aged(run, status, hours):
    Run.objects.filter(pk=run.pk).update(
        status=status, last_transition_at=timezone.now() - dt.timedelta(hours=hours)
    )


@pytest.mark.django_db
def test_runs_left_running_or_queued_past_the_threshold_are_failed_with_the_sweeps_sentence(
    org, member, settings
):
    settings.STALE_RUN_REAPED_AFTER_HOURS = 6
    agent = published_agent(org)
    dead = queued_run(member, org, agent)
    aged(dead, RunStatus.RUNNING, 7)
    stuck = queued_run(member, org, agent)
    aged(stuck, RunStatus.QUEUED, 8)
    young = queued_run(member, org, agent)
    aged(young, RunStatus.RUNNING, 1)
    parked = queued_run(member, org, agent)
    aged(parked, RunStatus.AWAITING_APPROVAL, 30)

    assert reap_stale_runs() == 2

    dead.refresh_from_db()
    assert dead.status == "failed" and dead.stop_reason == "reaped"
    assert dead.error.startswith("The stale-run sweep ended this run: it was still running 6 hours")
    assert dead.ended_at is not None
    stuck.refresh_from_db()
    assert stuck.status == "failed"
    young.refresh_from_db()
    parked.refresh_from_db()
    assert young.status == "running" and parked.status == "awaiting_approval"


@pytest.mark.django_db
def test_zero_turns_the_sweep_off(org, member, settings):
    settings.STALE_RUN_REAPED_AFTER_HOURS = 0
    run = queued_run(member, org, published_agent(org))
    aged(run, RunStatus.RUNNING, 1000)
    assert runs_reap_stale() == 0
    run.refresh_from_db()
    assert run.status == "running"


@pytest.mark.django_db
def test_a_live_runs_later_terminal_write_wins_over_the_sweep(org, member, settings):
    settings.STALE_RUN_REAPED_AFTER_HOURS = 6
    run = queued_run(member, org, published_agent(org))
    aged(run, RunStatus.RUNNING, 7)
    assert runs_reap_stale() == 1

    run_finish(
        run=run,
        outcome=Outcome(RunStatus.COMPLETED, StopReason.ANSWERED),
        model=None,
        records=[],
        messages=None,
        output="finally done",
    )

    run.refresh_from_db()
    assert (run.status, run.error, run.output) == ("completed", "", "finally done")


@pytest.mark.django_db
def test_a_reaped_run_keeps_what_its_ledger_booked_as_a_floor_and_its_reservation_is_released(
    org, member, settings
):
    settings.STALE_RUN_REAPED_AFTER_HOURS = 6
    agent = published_agent(org)
    run = queued_run(member, org, agent)
    book_spend(run, Decimal("0.5"))
    # The worker died with a request in flight: its reservation is still on the counters.
    BudgetCounter.objects.filter(organization=org).update(reserved_usd=Decimal("0.01"))
    aged(run, RunStatus.RUNNING, 7)

    runs_reap_stale()

    run.refresh_from_db()
    assert run.status == "failed"
    assert Decimal("0.5") <= run.cost_usd < Decimal("0.5001") and run.cost_is_partial
    assert set(
        BudgetCounter.objects.filter(organization=org).values_list("reserved_usd", flat=True)
    ) == {Decimal("0")}


@pytest.mark.django_db
def test_the_age_is_the_last_transition_not_the_first_start(org, member, settings):
    settings.STALE_RUN_REAPED_AFTER_HOURS = 6
    run = queued_run(member, org, published_agent(org))
    # Started two days ago, parked, resumed an hour ago: not stale.
    Run.objects.filter(pk=run.pk).update(
        status=RunStatus.RUNNING,
        started_at=timezone.now() - dt.timedelta(days=2),
        last_transition_at=timezone.now() - dt.timedelta(hours=1),
    )
    assert runs_reap_stale() == 0
