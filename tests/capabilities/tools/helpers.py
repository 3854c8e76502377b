"""Drive the real tools through a real pydantic-ai Agent with a scripted FunctionModel."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from apps.capabilities.implementations import toolset_builder
from apps.capabilities.run_context import RunResources, ToolsetContext


def toolset_context(resources: RunResources | None = None, **fields: Any) -> ToolsetContext:
    """A builder's context over ``resources`` (or a RunResources of ``fields``)."""
    return ToolsetContext(
        organization_id=1,
        agent_id=1,
        run_id=1,
        user_id=None,
        surface="api",
        resources=resources if resources is not None else RunResources(**fields),
    )


def build(
    capability_id: str,
    config: dict | None = None,
    *,
    context: ToolsetContext | None = None,
    **binding: Any,
):
    """The registered builder's toolset for a binding of ``capability_id``."""
    builder = toolset_builder(capability_id)
    assert builder is not None, f"no builder registered for {capability_id}"
    return builder(
        {"id": capability_id, "config": config or {}, **binding}, context or toolset_context()
    )


@dataclass
class Script:
    """A FunctionModel that answers with ``steps`` in order (a list of tool calls, or a text), then
    "done"; it records what each request offered and carried."""

    steps: list[Any]
    infos: list[AgentInfo] = field(default_factory=list)
    requests: list[list[ModelMessage]] = field(default_factory=list)

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.infos.append(info)
        self.requests.append(list(messages))
        index = len(self.infos) - 1
        step = self.steps[index] if index < len(self.steps) else "done"
        if isinstance(step, str):
            return ModelResponse(parts=[TextPart(step)])
        calls = step if isinstance(step, list) else [step]
        return ModelResponse(
            parts=[
                ToolCallPart(name, args, tool_call_id=f"call-{index}-{n}")
                for n, (name, args) in enumerate(calls)
            ]
        )

    def model(self) -> FunctionModel:
        return FunctionModel(self)


def call(tool_name: str, /, **args: Any) -> tuple[str, dict]:
    return (tool_name, args)


def run_agent(toolsets, steps, **agent_kwargs):
    """Run an Agent over ``toolsets`` with the scripted ``steps``; returns (result, script)."""
    script = Script(steps)
    agent = Agent(script.model(), toolsets=[t for t in toolsets if t is not None], **agent_kwargs)
    result = agent.run_sync("go")
    return result, script


def tool_returns(messages: list[ModelMessage]) -> list[ToolReturnPart]:
    return [
        p
        for m in messages
        if isinstance(m, ModelRequest)
        for p in m.parts
        if isinstance(p, ToolReturnPart)
    ]


def offered_names(script: Script, request: int = 0) -> set[str]:
    return {t.name for t in script.infos[request].function_tools}
