"""The one assembly: a pydantic-ai agent built from its bindings, its run's resources, its approval
gate and its budget meter. The run's own agent (``runner.assemble`` / ``runner.open_meter``) and
every delegation's (``delegation.tools``) are built here, so a delegate is guarded, gated, tooled
and configured exactly as a run is — a new kind of run plugs into these two functions rather than
growing an assembly of its own.

Pure: nothing here reads the database. What a binding needs (its key, its collections, its memory
store) was resolved before and comes in through ``secret_of`` and ``resources``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from pydantic_ai import Agent, DeferredToolRequests
from pydantic_ai.settings import ModelSettings

from apps.agents.spec import CapabilityBinding
from apps.approvals.gate import ApprovalGate
from apps.capabilities.implementations import toolset_builder
from apps.capabilities.run_context import RunResources, ToolsetContext
from apps.capabilities.tools.failures import LastAttemptArguments
from apps.spend.guard import BudgetGuard, RunMeter

from .modelbuilder import ModelHandle
from .offline import offline_toolset


@dataclass(frozen=True)
class Caller:
    """Who a toolset is built for: what every binding's builder reads of the run."""

    organization_id: int
    agent_id: int
    run_id: int
    user_id: int | None
    surface: str


def toolsets_for(
    bindings: Iterable[CapabilityBinding],
    resources: RunResources,
    *,
    caller: Caller,
    handle: ModelHandle,
    secret_of: Callable[[CapabilityBinding], str | None],
    more: Iterable = (),
) -> tuple[list, list[str]]:
    """Each binding's toolset (a builder that contributes nothing adds nothing), then ``more``
    (the run's MCP connections), then the offline model's own tools when it runs offline.
    Returns (toolsets, the ids of bindings no builder implements)."""
    toolsets: list = []
    unbuilt: list[str] = []
    for binding in bindings:
        builder = toolset_builder(binding.id)
        if builder is None:
            unbuilt.append(binding.id)
            continue
        context = ToolsetContext(
            organization_id=caller.organization_id,
            agent_id=caller.agent_id,
            run_id=caller.run_id,
            user_id=caller.user_id,
            surface=caller.surface,
            secret_value=secret_of(binding),
            resources=resources,
        )
        toolset = builder(binding, context)
        if toolset is not None:
            toolsets.append(toolset)
    toolsets.extend(more)
    if handle.provider == "offline":
        toolsets.append(offline_toolset())
    return toolsets, unbuilt


def agent_for(
    *,
    handle: ModelHandle,
    meter: RunMeter,
    gate: ApprovalGate,
    toolsets: list,
    instructions: Iterable[str | None],
    capabilities: Iterable,
    model_settings: ModelSettings | None,
    name: str,
) -> tuple[Agent, BudgetGuard]:
    """The agent, with the budget guard first (it must see every model request before anything
    else shapes it), the last attempt's arguments, the bindings' capabilities, and the approval
    gate last when it has work. A gated call or a question ends the agent's run with its parked
    calls as output. Returns the agent and its guard."""
    guard = BudgetGuard(meter=meter)
    stack = [guard, LastAttemptArguments(), *capabilities]
    if gate.has_work():
        stack.append(gate)
    agent = Agent(
        handle.model,
        instructions="\n\n".join(text for text in instructions if text) or None,
        toolsets=toolsets,
        capabilities=stack,
        output_type=[str, DeferredToolRequests],
        model_settings=model_settings,
        name=name,
    )
    return agent, guard
