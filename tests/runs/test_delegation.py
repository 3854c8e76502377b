"""Delegation through the real runner: one ledger, honest rows, approvals that continue in place.

Every agent here runs on the offline model (a FunctionModel following MAP.md's contract), so a
parent's ``/call task {...}`` hands its delegate a description that is itself a script."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
from django.db.models import Sum

from apps.approvals.models import ToolApproval
from apps.approvals.services import approval_decide
from apps.runs.events import frames_after
from apps.runs.models import Run
from apps.runs.runner import execute_run
from apps.runs.services import run_create
from apps.spend.models import LedgerEntry
from tests.runs.factories import published_agent


def task_call(description: str, delegate: str) -> str:
    return "/call task " + json.dumps({"description": description, "subagent_type": delegate})


def delegating(org, *pins, name="Orchestrator", config=None, capabilities=(), **spec):
    return published_agent(
        org,
        name=name,
        capabilities=[{"id": "subagents", "config": config or {}}, *capabilities],
        subagents=[{"agent_id": pin.pk, "version": 1} if hasattr(pin, "pk") else pin for pin in pins],
        **spec,
    )


def run_of(member, org, agent, text, surface="api") -> Run:
    run = run_create(actor=member, organization=org, agent=agent, input=text, surface=surface)
    execute_run(run.pk)
    return Run.objects.get(pk=run.pk)


def own_entries(run: Run, **filters):
    return LedgerEntry.objects.filter(ledger__run=run, **filters)


def total(entries) -> Decimal:
    return entries.aggregate(total=Sum("cost_usd"))["total"] or Decimal("0")


@pytest.mark.django_db
def test_a_sync_delegation_books_into_the_runs_one_ledger_and_gets_its_own_row(org, member):
    helper = published_agent(org, name="Helper", capabilities=[{"id": "planning"}])
    parent = delegating(org, helper)

    run = run_of(member, org, parent, task_call("/call read_plan {}", "helper"))

    assert run.status == "completed", run.error
    child = Run.objects.get(parent_run=run)
    assert child.agent_id == helper.pk and child.status == "completed"
    assert child.subagent_task_id
    delegated = own_entries(run, delegation=child.subagent_task_id)
    assert delegated.count() == child.request_count == 2
    assert set(delegated.values_list("agent_id", flat=True)) == {helper.pk}
    assert set(delegated.values_list("billed_delegation", flat=True)) == {child.subagent_task_id}
    # The child's row is its share; the parent's row is the whole ledger, the authority.
    assert child.cost_usd == total(delegated) > 0
    assert run.cost_usd == total(own_entries(run)) == total(own_entries(run, delegation="")) + child.cost_usd
    assert child.started_at <= child.ended_at
    assert "no plan" in child.output.lower() or child.output
    frames = [f["type"] for f in frames_after(run.pk)]
    assert "subagent_started" in frames and "subagent_finished" in frames
    assert "subagent_recorded" in frames
