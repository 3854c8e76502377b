"""Agents whose planning tools are gated, and runs parked on them, for the approvals tests.

planning's tools act on nothing, so none is gated by default; ``tool_approval`` makes
``add_task`` (and optionally ``write_plan``) "required" — seed 003: required works on any tool.
"""

from __future__ import annotations

from apps.runs.models import Run
from apps.runs.runner import execute_run
from apps.runs.services import run_create
from tests.runs.factories import published_agent


def gated_agent(organization, *, tools=("add_task",), name="Gated", extra_capabilities=(), **spec):
    binding = {"id": "planning", "tool_approval": {tool: "required" for tool in tools}}
    return published_agent(
        organization, name=name, capabilities=[binding, *extra_capabilities], **spec
    )


def run_now(
    actor, organization, agent, text, *, surface="api", approval_mode="follow", conversation=None
) -> Run:
    run = run_create(
        actor=actor,
        organization=organization,
        agent=agent,
        input=text,
        surface=surface,
        approval_mode=approval_mode,
        conversation=conversation,
    )
    execute_run(run.pk)
    return Run.objects.get(pk=run.pk)


ADD_ONE = '/call add_task {"content": "Email the customer"}'
ADD_TWO = '/call add_task {"content": "Email the customer"}\n/call add_task {"content": "Email the account manager"}'
