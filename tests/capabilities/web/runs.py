"""Run an agent through the real runner on the offline model and read what its tools returned."""

from __future__ import annotations

import json

from pydantic_ai.messages import ModelMessagesTypeAdapter

from apps.runs.models import Run
from apps.runs.runner import execute_run
from tests.capabilities.tools.helpers import tool_returns
from tests.runs.factories import published_agent, queued_run


def slash_call(tool: str, **args) -> str:
    return f"/call {tool} {json.dumps(args)}"


def run_now(actor, org, agent, text, conversation=None) -> Run:
    run = queued_run(actor, org, agent, text, conversation=conversation)
    execute_run(run.pk)
    return Run.objects.get(pk=run.pk)


def agent_with(org, *bindings):
    return published_agent(org, capabilities=list(bindings))


def stored_returns(run: Run):
    return tool_returns(ModelMessagesTypeAdapter.validate_python(run.transcript))


def only_return(run: Run):
    (part,) = stored_returns(run)
    return part
