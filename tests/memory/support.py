"""Runs driven through the real runner on the offline model (``/call TOOL {json}``), from any
surface and audience, and what they left behind."""

from __future__ import annotations

import json

from asgiref.sync import async_to_sync
from pydantic_ai.messages import ModelMessagesTypeAdapter, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from apps.runs.models import Conversation, Run
from apps.runs.runner import execute_run, prepare
from apps.runs.services import run_create
from tests.capabilities.tools.helpers import tool_returns


def slash_call(tool: str, **args) -> str:
    return f"/call {tool} {json.dumps(args)}"


def group_chat(org, agent, user, key="slack:T042:C0815") -> Conversation:
    """A group chat's conversation, as a channel adapter admits it."""
    return Conversation.objects.create(
        organization=org, agent=agent, user=user, surface="slack", group_chat_key=key
    )


def queue(actor, org, agent, text, *, surface="chat", conversation=None) -> Run:
    return run_create(
        actor=actor,
        organization=org,
        agent=agent,
        input=text,
        surface=surface,
        conversation=conversation,
    )


def run_now(actor, org, agent, text, *, surface="chat", conversation=None) -> Run:
    run = queue(actor, org, agent, text, surface=surface, conversation=conversation)
    execute_run(run.pk)
    return Run.objects.get(pk=run.pk)


def returns_of(run: Run) -> list[str]:
    """What each tool call of the run returned, in order."""
    parts = tool_returns(ModelMessagesTypeAdapter.validate_python(run.transcript))
    return [str(part.content) for part in parts]


def first_request_instructions(run: Run) -> str:
    """The instructions the first model request of ``run`` carries, as the runner assembles it."""
    prepared = prepare(run)
    seen: list[AgentInfo] = []

    def answer(messages, info: AgentInfo) -> ModelResponse:
        seen.append(info)
        return ModelResponse(parts=[TextPart("done")])

    async def go():
        await prepared.agent.run(
            prepared.user_prompt, model=FunctionModel(answer), usage_limits=prepared.usage_limits
        )

    async_to_sync(go)()
    return seen[0].instructions or ""
