"""The hourly expiry sweep: nobody decided."""

import datetime as dt

import pytest
from django.utils import timezone

from agenticos.schedule import SCHEDULE
from apps.approvals import services
from apps.approvals.models import ToolApproval
from apps.audit.models import AuditEntry
from apps.runs.models import RunStep
from apps.spend.models import Ledger

from .factories import ADD_ONE, ADD_TWO, gated_agent, run_now


def later(settings, hours_past=1):
    return timezone.now() + dt.timedelta(hours=settings.APPROVAL_EXPIRY_HOURS + hours_past)


@pytest.mark.django_db
def test_the_sweep_expires_calls_with_no_decider_and_an_audit_entry_with_no_actor(
    org, member, settings
):
    run = run_now(member, org, gated_agent(org), ADD_ONE)

    assert services.approvals_expire_stale(now=later(settings)) == 1

    approval = ToolApproval.objects.get(run=run)
    assert (
        approval.status == "expired"
        and approval.decided_by is None
        and approval.decided_via == "sweep"
    )
    entry = AuditEntry.objects.get(action="approval.expire")
    assert entry.actor is None and entry.organization == org


@pytest.mark.django_db
def test_expiry_cancels_the_run_without_a_model_request_and_keeps_its_spend(org, member, settings):
    run = run_now(member, org, gated_agent(org), ADD_ONE)
    spent, requests = run.cost_usd, run.request_count

    services.approvals_expire_stale(now=later(settings))

    run.refresh_from_db()
    assert run.status == "cancelled"
    assert "Nobody decided" in run.error
    assert run.request_count == requests and run.cost_usd == spent
    assert Ledger.objects.get(run=run).request_count == requests
    step = RunStep.objects.get(run=run, kind="tool_call")
    assert step.detail["status"] == "expired"
    assert AuditEntry.objects.get(action="run.cancel.approval_expired").actor is None


@pytest.mark.django_db
def test_expiry_does_not_cancel_a_run_with_a_call_still_inside_its_window(org, member, settings):
    run = run_now(member, org, gated_agent(org), ADD_TWO)
    old, young = ToolApproval.objects.filter(run=run).order_by("pk")
    ToolApproval.objects.filter(pk=old.pk).update(
        created_at=timezone.now() - dt.timedelta(hours=settings.APPROVAL_EXPIRY_HOURS + 1)
    )

    assert services.approvals_expire_stale() == 1

    run.refresh_from_db()
    young.refresh_from_db()
    assert run.status == "awaiting_approval" and young.status == "pending"


@pytest.mark.django_db
def test_the_sweep_leaves_calls_inside_the_window_alone(org, member):
    run = run_now(member, org, gated_agent(org), ADD_ONE)
    assert services.approvals_expire_stale() == 0
    assert ToolApproval.objects.get(run=run).status == "pending"


def test_both_sweeps_are_declared_hourly_in_the_schedule():
    tasks = {job.task: job for job in SCHEDULE}
    for name in (
        "apps.approvals.tasks.expire_stale_approvals",
        "apps.approvals.tasks.expire_stale_questions",
    ):
        assert tasks[name].every_seconds == 3600 and tasks[name].expires_seconds < 3600
