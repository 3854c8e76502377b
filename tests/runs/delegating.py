"""Agents that delegate, and runs of them, for the delegation tests (tests/runs/test_delegation.py,
tests/spend/test_delegated_spend.py, the browser test)."""

from __future__ import annotations

import json

from apps.runs.models import Run
from apps.runs.runner import execute_run
from apps.runs.services import run_create
from tests.runs.factories import published_agent


def task_call(description: str, delegate: str) -> str:
    return "/call task " + json.dumps({"description": description, "subagent_type": delegate})


def delegating(org, *pins, name="Orchestrator", config=None, capabilities=(), **spec):
    return published_agent(
        org,
        name=name,
        capabilities=[{"id": "subagents", "config": config or {}}, *capabilities],
        subagents=[
            {"agent_id": pin.pk, "version": 1} if hasattr(pin, "pk") else pin for pin in pins
        ],
        **spec,
    )


def run_of(member, org, agent, text, surface="api") -> Run:
    run = run_create(actor=member, organization=org, agent=agent, input=text, surface=surface)
    execute_run(run.pk)
    return Run.objects.get(pk=run.pk)


ADD = '/call add_task {"content": "Email the customer"}'


def gated_helper(org, name="Mailer"):
    return published_agent(
        org,
        name=name,
        capabilities=[{"id": "planning", "tool_approval": {"add_task": "required"}}],
    )
