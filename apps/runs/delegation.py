"""Delegation: an agent handing work to agents, inside one run, on one ledger (docs/delegation.md).

The ``subagents`` capability's toolset lives here, in the runs app, because a delegation is a
run inside a run: it needs the runner's assembly (model, toolsets, budget guard, approval gate),
the run's frames and its parking. It is registered with
``apps.capabilities.implementations.register_toolset`` from ``RunsConfig.ready()``, which is what
makes the capability available.

Three phases, each where it belongs:

1. **Resolve** (``resolve_scope``, on the thread that prepares the run, the one place this module
   reads the database): the pinned delegates' published versions, their model profiles and keys,
   their own delegates down to the depth each agent's own spec allows; a pin to a missing version
   or an archived agent refuses the run naming the delegate.
2. **Run** (the tools, on the run's event loop, no database): ``task`` builds a fresh agent for the
   delegation from what was resolved — its own model, priced by its own provider, its own gate,
   a budget guard over the run's one ledger and the run's caps — and runs it, in place (sync) or
   on the library's task manager (async). A gated call inside a sync delegation parks the whole
   run with the delegation's state kept as one node of the parked tree; approving it continues
   that delegate where it stopped.
3. **Book** (``book_delegations``, inside the transaction that books the run's end): one row per
   finished delegation of a published agent, costed from its own ledger entries.

subagents-pydantic-ai (pinned) supplies the background half: its ``TaskManager``, task handles
(which stamp when a delegate started and finished) and the six lifecycle tools. The sync half is
this module's, because continuing a parked delegate in place needs the delegate's message
history and its parked calls, which the library discards when it re-raises the suspension.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import re
import uuid
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, cast

from django.conf import settings
from django.db.models import Count, Q, Sum
from django.utils import timezone
from pydantic_ai import Agent, DeferredToolRequests, RunContext, UsageLimits
from pydantic_ai.exceptions import (
    ApprovalRequired,
    ModelAPIError,
    ModelHTTPError,
    RunCancelled,
    UsageLimitExceeded,
)
from pydantic_ai.messages import (
    FunctionToolCallEvent,
    FunctionToolResultEvent,
    ModelMessagesTypeAdapter,
    PartDeltaEvent,
    PartStartEvent,
    TextPart,
    TextPartDelta,
)
from pydantic_ai.settings import ModelSettings
from pydantic_ai.tools import DeferredToolResults, ToolApproved, ToolDenied

from apps.approvals.gate import ASK_TOOL_NAME, ApprovalGate
from apps.capabilities.implementations import toolset_builder
from apps.capabilities.run_context import RunResources, ToolsetContext
from apps.capabilities.tools import contributions, planning
from apps.capabilities.tools._toolsets import declared_toolset, parsed_config
from apps.capabilities.tools.failures import LastAttemptArguments
from apps.spend.guard import BudgetGuard, RunMeter
from apps.spend.services import BudgetExceeded

from .events import (
    Frame,
    SubagentFinishedFrame,
    SubagentParkedFrame,
    SubagentRecordedFrame,
    SubagentStartedFrame,
    SubagentTextDeltaFrame,
    SubagentToolCallFrame,
    SubagentToolResultFrame,
)
from .modelbuilder import ModelHandle, ModelUnavailable, build_model, model_profile_for
from .offline import offline_toolset

logger = logging.getLogger(__name__)

CAPABILITY_ID = "subagents"
_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")

BACKGROUND_GATE_REFUSAL = (
    "{tool} needs a person's approval, and a delegation running in the background cannot stop "
    'to ask one. Delegate this work with mode="sync" instead, so the person can decide it.'
)
FAILED_SENTENCE = "The delegate failed with an internal error; the details are in the server log."
LIFECYCLE_TOOLS = (
    "check_task",
    "wait_tasks",
    "list_active_tasks",
    "answer_subagent",
    "send_message_to_subagent",
    "soft_cancel_task",
    "hard_cancel_task",
)


class DelegateTimeout(Exception):
    """A delegate's model request took longer than its own profile's request timeout."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        super().__init__(f"no answer within {seconds:g} s")


class DelegateNotRunnable(Exception):
    """A pinned delegate cannot run (missing version, archived agent, no model): the run is
    refused before its first request, with the sentence naming the delegate."""

    def __init__(self, sentence: str) -> None:
        self.sentence = sentence
        super().__init__(sentence)


# --- what is resolved before the run ------------------------------------------------------------


@dataclass
class Delegate:
    """One delegate an agent can call by name, resolved before the run: everything needed to
    build a fresh agent for each delegation without reaching the database."""

    name: str
    description: str
    # The mode this delegate runs in, decided by the author (the binding's, or the pin's or the
    # specialist's own override); "auto" is resolved before each delegation starts.
    mode: str
    published: bool
    handle: ModelHandle
    instructions: str
    bindings: list
    secrets: dict[str, str | None]
    max_steps: int
    # The spec whose gate governs the delegate's calls: its own for a published delegate; the
    # parent's for an inline specialist (its only tools are what the parent shares with it).
    gate_spec: Any
    # The agent its row bills to: its own when published, the nearest published ancestor's when
    # inline (an inline specialist has no agent to attribute a row to).
    agent_id: int
    agent_version_id: int | None = None
    # Its own delegates (None: it does not delegate, or the tree has no level left for it).
    scope: DelegationScope | None = None
    definition: dict | None = None
    # The context files its spec binds, read before the run.
    context_files: list = field(default_factory=list)
    # The skills its spec binds (``apps.knowledge.selectors.skills_for_run``), read before the run.
    skills: list = field(default_factory=list)


@dataclass
class DelegationScope:
    """One agent's delegation settings and delegates, as the subagents builder reads them from the
    run context (``ToolsetContext.delegation``)."""

    config: Any
    delegates: dict[str, Delegate]
    # Delegation levels this agent may still start, its own included (>= 1).
    levels: int
    runtime: DelegationRuntime | None = None
    # allow_dynamic: the organization's model profiles a specialist the model writes may run on
    # (by label), and what such a specialist is built with (the owning agent's row and gate).
    dynamic_models: dict[str, ModelHandle] = field(default_factory=dict)
    owner_agent_id: int = 0
    owner_spec: Any = None
    owner_max_steps: int = 25

    def background_reachable(self) -> bool:
        if self.config.allow_dynamic:
            return True
        return any(d.mode in ("async", "auto") for d in self.delegates.values())

    def instructions(self) -> str:
        """What the model is told about its delegates: by name, each with the mode this run will
        really use (next to its name, since a per-delegate override would break a single line),
        and the fan-out cap it would otherwise discover by being refused."""
        lines = ["You can hand self-contained work to these delegates with the task tool:"]
        for delegate in self.delegates.values():
            how = {
                "sync": "waits for its answer",
                "async": "runs in the background and returns a task id",
                "auto": "waits or runs in the background, decided per task",
            }[delegate.mode]
            lines.append(f"- {delegate.name} ({how}): {delegate.description}")
        lines.append(
            f"At most {self.config.max_fanout} delegations run at once. A delegate does not see "
            "this conversation: describe the whole task."
        )
        return "\n".join(lines)


@dataclass
class DelegationRecord:
    """A finished delegation of a published agent, to be booked as its own run row."""

    task_id: str
    parent_task_id: str
    agent_id: int
    agent_version_id: int
    name: str
    input: str
    status: str
    stop_reason: str
    error: str
    output: str
    started_at: dt.datetime
    ended_at: dt.datetime
    provider: str
    model_name: str
    model_label: str

    def as_json(self) -> dict:
        data = dict(self.__dict__)
        data["started_at"] = self.started_at.isoformat()
        data["ended_at"] = self.ended_at.isoformat()
        return data

    @classmethod
    def from_json(cls, data: dict) -> DelegationRecord:
        data = dict(data)
        data["started_at"] = dt.datetime.fromisoformat(data["started_at"])
        data["ended_at"] = dt.datetime.fromisoformat(data["ended_at"])
        return cls(**data)


@dataclass
class Level:
    """One agent instance of the run's tree: the run's own agent, or one delegation of it.

    ``parked`` collects the delegations that parked under it in this segment (keyed by the
    ``task`` call's id); ``resuming`` holds those of the parked state this segment continues."""

    task_id: str = ""
    # The delegation its own requests bill to: "" for the run's row, a published delegate's task
    # id, or an inline specialist's nearest published ancestor's.
    billed: str = ""
    parked: dict[str, dict] = field(default_factory=dict)
    resuming: dict[str, dict] = field(default_factory=dict)
    # Specialists the model wrote with create_agent, by name (their definitions): they last the
    # whole run, a park included (carried in the parked state), and never the next turn.
    created: dict[str, dict] = field(default_factory=dict)


@dataclass
class DelegationRuntime:
    """The run-wide state every delegation in the tree shares: set up by prepare(), given the
    run's meter, cancellation token and frame sender by the runner."""

    organization_id: int
    run_id: int
    user_id: int | None
    surface: str
    approval_mode: str
    meter: RunMeter | None = None
    token: Any = None
    send: Any = None
    root: Level = field(default_factory=Level)
    records: list[DelegationRecord] = field(default_factory=list)
    # Delegations in flight per level (its task id), for max_fanout.
    in_flight: dict[str, int] = field(default_factory=dict)
    # What a resumed delegate's parked calls returned, to settle their steps.
    settled_returns: dict[str, str] = field(default_factory=dict)
    background: list[Any] = field(default_factory=list)
    # Every delegate's approval gate: an approve-everything session's waived calls inside a
    # delegation are written as standing rows too, when the run stops.
    gates: list[Any] = field(default_factory=list)

    # Background delegations still running, by task id (every level of the tree).
    live: dict[str, LiveDelegation] = field(default_factory=dict)
    # Set once the run answered with background delegations still running: they outlive it
    # (``outlive``); ``late`` collects those directly under the run's own agent as they settle,
    # for the notice on its conversation.
    outliving: bool = False
    late: list[dict] = field(default_factory=list)

    def emit(self, *frames: Frame) -> None:
        if self.send is not None:
            self.send(*frames)

    def live_tasks(self) -> set[asyncio.Task]:
        return {live.task for live in self.live.values() if not live.task.done()}


@dataclass
class LiveDelegation:
    """A background delegation still running: what its row needs if it outlives the answer."""

    task: asyncio.Task
    delegate: Delegate
    description: str
    # The task id of the nearest published ancestor ("" = the run's row).
    billed_to: str
    # The library's handle: when the delegate really started.
    handle: Any = None


def _mode_for(pin_mode: str | None, binding_mode: str) -> str:
    return pin_mode or binding_mode


def _resources_for(spec, bindings, organization_id: int) -> RunResources:
    bound = {binding.id for binding in bindings}
    resources = RunResources()
    if "planning" in bound:
        # A delegate's plan is its own and lives for the delegation only (it has no conversation).
        resources.plan = planning.seed_plan(stored=None, parked=None)
    return resources


def _context_files(spec, bindings, organization) -> list:
    if not any(binding.id == "context" for binding in bindings):
        return []
    from apps.memory.selectors import context_files_for_run

    return list(context_files_for_run(organization.pk, spec.context_ids))


def _skills(spec, bindings, organization) -> list:
    if not any(binding.id == "skills" for binding in bindings):
        return []
    from apps.knowledge.selectors import skills_for_run

    return skills_for_run(organization.pk, spec.skill_ids)


def _secrets_for(bindings, organization, who: str) -> dict[str, str | None]:
    from apps.vault.models import Secret
    from apps.vault.services import secret_reveal

    secrets: dict[str, str | None] = {}
    for binding in bindings:
        if binding.secret_id is None:
            continue
        secret = Secret.objects.filter(organization=organization, pk=binding.secret_id).first()
        if secret is None:
            raise DelegateNotRunnable(
                f"The key of the {binding.id} capability of the delegate {who} is no longer in the vault."
            )
        secrets[binding.id] = secret_reveal(secret)
    return secrets


def _shared_bindings(parent_bindings, config, own_ids: set[str]) -> list:
    # A delegate runs with its own spec plus exactly what share_with_delegates names, id by id;
    # subagents never (a stored spec from before that rule cannot widen a delegate either).
    shared = [cap for cap in config.share_with_delegates if cap != CAPABILITY_ID]
    return [b for b in parent_bindings if b.id in shared and b.id not in own_ids]


def resolve_scope(
    *,
    organization,
    spec,
    bindings,
    handle: ModelHandle,
    agent_id: int,
    levels_left: int | None = None,
) -> DelegationScope | None:
    """The delegates of one agent of the tree, resolved now; None when it delegates to nobody.

    ``levels_left`` is what the tree above leaves this agent (None for the run's own agent); the
    agent gets the smaller of that and its own ``max_depth`` — a cap a caller could widen would
    not be a cap, and pinning a delegate exists so its author's decisions hold when another agent
    calls it. At the limit the delegate is built without delegation at all."""
    from apps.agents.models import Agent, AgentStatus, AgentVersion

    binding = next((b for b in bindings if b.id == CAPABILITY_ID), None)
    if binding is None:
        return None
    config = parsed_config(CAPABILITY_ID, binding)
    levels = config.max_depth if levels_left is None else min(levels_left, config.max_depth)
    if levels < 1:
        return None
    delegates: dict[str, Delegate] = {}
    for pin in spec.subagents:
        target = Agent.objects.filter(pk=pin.agent_id, organization=organization).first()
        if target is None:
            raise DelegateNotRunnable(f"The delegate agent {pin.agent_id} no longer exists.")
        if target.status == AgentStatus.ARCHIVED:
            raise DelegateNotRunnable(f"The delegate {target.name} is archived.")
        if pin.version is None:
            version = target.current_version
        else:
            version = AgentVersion.objects.filter(agent=target, number=pin.version).first()
        if version is None:
            raise DelegateNotRunnable(
                f"The delegate {target.name} has no version {pin.version or '(none published)'}."
            )
        own = version.frozen_spec
        own_bindings = own.enabled_bindings()
        own_ids = {b.id for b in own_bindings}
        all_bindings = own_bindings + _shared_bindings(bindings, config, own_ids)
        try:
            own_handle = build_model(model_profile_for(organization, own.model_profile_id))
        except ModelUnavailable as exc:
            raise DelegateNotRunnable(f"The delegate {target.name}: {exc.sentence}") from exc
        name = _delegate_name(target.name, delegates)
        delegates[name] = Delegate(
            name=name,
            description=(own.instructions or target.name).strip().splitlines()[0][:300],
            mode=_mode_for(pin.mode, config.mode),
            published=True,
            handle=own_handle,
            instructions=own.instructions,
            bindings=all_bindings,
            secrets=_secrets_for(all_bindings, organization, target.name),
            max_steps=own.limits.max_steps,
            gate_spec=own,
            agent_id=target.pk,
            agent_version_id=version.pk,
            context_files=_context_files(own, all_bindings, organization),
            skills=_skills(own, all_bindings, organization),
            scope=resolve_scope(
                organization=organization,
                spec=own,
                bindings=all_bindings,
                handle=own_handle,
                agent_id=target.pk,
                levels_left=levels - 1,
            ),
        )
    for specialist in config.inline:
        if specialist.model_profile_id:
            try:
                profile = model_profile_for(organization, int(specialist.model_profile_id))
                specialist_handle = build_model(profile)
            except (ModelUnavailable, ValueError) as exc:
                raise DelegateNotRunnable(
                    f"The specialist {specialist.name} has no usable model profile."
                ) from exc
        else:
            specialist_handle = handle
        shared = _shared_bindings(bindings, config, set())
        delegates[specialist.name] = Delegate(
            name=specialist.name,
            description=specialist.description,
            mode=_mode_for(specialist.mode, config.mode),
            published=False,
            handle=specialist_handle,
            instructions=specialist.instructions,
            bindings=shared,
            secrets=_secrets_for(shared, organization, specialist.name),
            max_steps=spec.limits.max_steps,
            gate_spec=spec,
            agent_id=agent_id,
            definition={
                "name": specialist.name,
                "description": specialist.description,
                "instructions": specialist.instructions,
                "model_profile_id": specialist.model_profile_id,
            },
        )
    if not delegates and not config.allow_dynamic:
        # Bound without a delegate, the capability contributes nothing (seed 000).
        return None
    return DelegationScope(
        config=config,
        delegates=delegates,
        levels=levels,
        dynamic_models=_dynamic_models(organization) if config.allow_dynamic else {},
        owner_agent_id=agent_id,
        owner_spec=spec,
        owner_max_steps=spec.limits.max_steps,
    )


def _dynamic_models(organization) -> dict[str, ModelHandle]:
    """The organization's model profiles a written specialist may name, by label: each built now
    (its key decrypted here, before the run), so a specialist is priced, capped and keyed like
    everything else; a profile that cannot be built (no key) is left out of the list."""
    from apps.agents.selectors import model_profiles_for

    models: dict[str, ModelHandle] = {}
    for profile in model_profiles_for(organization).order_by("label"):
        try:
            models[profile.label] = build_model(profile)
        except ModelUnavailable:
            continue
    if not models:
        # An organization with no profile runs on the offline default; so may its specialists.
        default = model_profile_for(organization, None)
        models[default.label] = build_model(default)
    return models


def _delegate_name(agent_name: str, taken: dict) -> str:
    base = "".join(c if c.isalnum() else "-" for c in agent_name.lower()).strip("-") or "delegate"
    name, n = base, 2
    while name in taken:
        name, n = f"{base}-{n}", n + 1
    return name


def attach_runtime(scope: DelegationScope | None, runtime: DelegationRuntime) -> None:
    if scope is None:
        return
    scope.runtime = runtime
    for delegate in scope.delegates.values():
        attach_runtime(delegate.scope, runtime)


# --- building one delegation's agent (pure: no database) -----------------------------------------


@dataclass
class Built:
    agent: Agent
    meter: RunMeter
    # What the delegation's earlier segments spent (a parked delegation continued): its panel's
    # cost covers every segment, as its row does.
    carried_usd: Decimal = Decimal("0")
    carried_partial: bool = False

    @property
    def partial(self) -> bool:
        return self.carried_partial or any(not r.priced for r in self.meter.records)


def _build(
    delegate: Delegate,
    runtime: DelegationRuntime,
    level: Level,
    *,
    background: bool,
    asks: bool = False,
) -> Built:
    if runtime.meter is None:
        raise RuntimeError("a delegation started before its run's meter was opened")
    meter = runtime.meter.for_delegate(
        provider=delegate.handle.provider,
        model_name=delegate.handle.model_name,
        billing_agent_id=delegate.agent_id,
        delegation=level.task_id,
        billed_delegation=level.billed,
    )
    resources = _resources_for(delegate.gate_spec, delegate.bindings, runtime.organization_id)
    resources.context_files = delegate.context_files
    resources.skills = delegate.skills
    if delegate.scope is not None:
        resources.delegation = DelegationScopeAt(delegate.scope, level)
    toolsets = []
    for binding in delegate.bindings:
        builder = toolset_builder(binding.id)
        if builder is None:
            continue
        context = ToolsetContext(
            organization_id=runtime.organization_id,
            agent_id=delegate.agent_id,
            run_id=runtime.run_id,
            user_id=runtime.user_id,
            surface=runtime.surface,
            secret_value=delegate.secrets.get(binding.id),
            resources=resources,
        )
        toolset = builder(binding, context)
        if toolset is not None:
            toolsets.append(toolset)
    if delegate.handle.provider == "offline":
        toolsets.append(offline_toolset())
    gate = ApprovalGate(
        spec=delegate.gate_spec,
        mode=runtime.approval_mode,
        surface=runtime.surface,
        # allow_questions: a sync delegate asks the parent's person through the run's own
        # ask_user channel (the person who already holds the parent's tool call), never a model;
        # the gate contributes the question tool, as it does for the run's own agent.
        asks_user=asks,
        refuse_with=BACKGROUND_GATE_REFUSAL if background else None,
    )
    capabilities = [
        BudgetGuard(meter=meter),
        LastAttemptArguments(),
        *contributions.run_capabilities(delegate.bindings, resources),
    ]
    if gate.has_work():
        capabilities.append(gate)
        runtime.gates.append((level.task_id, gate))
    instructions = [
        text
        for text in (
            delegate.instructions,
            delegate.scope.instructions() if delegate.scope is not None else None,
            *contributions.run_instructions(delegate.bindings, resources),
        )
        if text
    ]
    agent = Agent(
        delegate.handle.model,
        instructions="\n\n".join(instructions) or None,
        toolsets=toolsets,
        capabilities=capabilities,
        output_type=[str, DeferredToolRequests],
        model_settings=cast(
            ModelSettings | None,
            contributions.run_model_settings(delegate.bindings, delegate.handle.provider) or None,
        ),
        name=f"delegate-{delegate.name}",
    )
    return Built(agent=agent, meter=meter)


@dataclass
class DelegationScopeAt:
    """A scope as one agent instance of the tree sees it: its delegates and its own level."""

    scope: DelegationScope
    level: Level


# --- the tools ----------------------------------------------------------------------------------


def _resolve_auto(description: str) -> str:
    # "auto" is resolved before the delegation starts, since whether a panel stays open after
    # the parent answered depends on it: the library's own rule, from the task's characteristics.
    from subagents_pydantic_ai.types import (
        SubAgentConfig,
        TaskCharacteristics,
        decide_execution_mode,
    )

    characteristics = TaskCharacteristics(
        estimated_complexity="complex" if len(description) > 600 else "simple"
    )
    config = SubAgentConfig(name="auto", description="", instructions="")
    return decide_execution_mode(characteristics, config)


class DelegationTools:
    """The ten declared tools of one agent instance's subagents binding."""

    def __init__(self, at: DelegationScopeAt) -> None:
        from subagents_pydantic_ai import SubAgentToolset

        self.scope = at.scope
        self.level = at.level
        if at.scope.runtime is None:
            raise RuntimeError("a delegation scope built without its run's runtime")
        self.runtime: DelegationRuntime = at.scope.runtime
        # The library's toolset for the background half: its task manager and lifecycle tools.
        self.library = SubAgentToolset(
            subagents=[],
            include_general_purpose=False,
            max_result_chars=self.scope.config.max_result_chars,
        )
        self.runtime.background.append(self.library)

    def functions(self) -> dict:
        lib = self.library
        return {
            "task": self.task,
            "check_task": lib.check_task,
            "wait_tasks": lib.wait_tasks,
            "list_active_tasks": lib.list_active_tasks,
            "answer_subagent": lib.answer_subagent,
            "send_message_to_subagent": lib.send_message_to_subagent,
            "soft_cancel_task": lib.soft_cancel_task,
            "hard_cancel_task": lib.hard_cancel_task,
            "create_agent": self.create_agent,
            "delegate": self.delegate,
        }

    def _written(self, definition: dict) -> Delegate:
        """A specialist the model wrote: instructions and one of the organization's model
        profiles, nothing else — no capabilities (a model may not grant its child one), no
        knowledge, no delegates; built like an inline specialist, on the run's guard and gate."""
        scope = self.scope
        return Delegate(
            name=definition["name"],
            description=definition["description"],
            mode=scope.config.mode,
            published=False,
            handle=scope.dynamic_models[definition["model"]],
            instructions=definition["instructions"],
            bindings=[],
            secrets={},
            max_steps=scope.owner_max_steps,
            gate_spec=scope.owner_spec,
            agent_id=scope.owner_agent_id,
            definition={**definition, "dynamic": True},
        )

    def _refuse_dynamic(self, name: str, model: str) -> str | None:
        if not _NAME.match(name or ""):
            return (
                "Error: a specialist's name is lower-case letters, digits, - and _ (at most 64), "
                "starting with a letter or digit."
            )
        if model not in self.scope.dynamic_models:
            # Only a model the organization has a profile for; the refusal names the list.
            return (
                f"Error: {model!r} is not one of this organization's model profiles. Name one of: "
                + ", ".join(self.scope.dynamic_models)
                + "."
            )
        return None

    async def create_agent(
        self, ctx: RunContext, name: str, description: str, instructions: str, model: str
    ) -> str:
        """Write a specialist for yourself, to delegate to by name in this run."""
        refusal = self._refuse_dynamic(name, model)
        if refusal:
            return refusal
        if name in self.scope.delegates or name in self.level.created:
            return f"Error: a specialist named {name!r} already exists; pick another name."
        limit = settings.MAX_DYNAMIC_SPECIALISTS
        if len(self.level.created) >= limit:
            return (
                f"Error: this run already keeps {limit} specialists written during it "
                "(MAX_DYNAMIC_SPECIALISTS). Delegate to one of them, or use delegate for a "
                "one-off task."
            )
        self.level.created[name] = {
            "name": name,
            "description": description,
            "instructions": instructions,
            "model": model,
        }
        return (
            f"Specialist '{name}' created on {model}. Use task with subagent_type '{name}' to "
            "delegate to it in this run; it is not kept after this turn."
        )

    async def delegate(
        self, ctx: RunContext, description: str, instructions: str, name: str, model: str
    ) -> str:
        """Write a one-off specialist and hand it a task in one call."""
        node = None
        if ctx.tool_call_approved and ctx.tool_call_id in self.level.resuming:
            node = self.level.resuming.pop(ctx.tool_call_id)
        refusal = None if node else self._refuse_dynamic(name, model)
        if refusal:
            return refusal
        written = self._written(
            {
                "name": name,
                "description": description[:300],
                "instructions": instructions,
                "model": model,
            }
        )
        return await self._dispatch(ctx, written, description, node)

    async def task(self, ctx: RunContext, description: str, subagent_type: str) -> str:
        """Hand a self-contained piece of work to one of this agent's specialists."""
        delegate = self.scope.delegates.get(subagent_type)
        if delegate is None and subagent_type in self.level.created:
            delegate = self._written(self.level.created[subagent_type])
        if delegate is None:
            available = ", ".join([*self.scope.delegates, *self.level.created]) or "none"
            hint = (
                " A specialist written with create_agent lasts one turn: create it again."
                if self.scope.config.allow_dynamic
                else ""
            )
            return f"Error: Unknown subagent '{subagent_type}'. Available: {available}.{hint}"
        node = None
        if ctx.tool_call_approved and ctx.tool_call_id in self.level.resuming:
            node = self.level.resuming.pop(ctx.tool_call_id)
        return await self._dispatch(ctx, delegate, description, node)

    async def _dispatch(
        self, ctx: RunContext, delegate: Delegate, description: str, node: dict | None
    ) -> str:
        key = self.level.task_id
        if node is None:
            running = self.runtime.in_flight.get(key, 0) + self._background_running(ctx)
            if running >= self.scope.config.max_fanout:
                # A pace limit is a result the model can act on, never an error that ends the run.
                return (
                    f"Not started: {running} delegations are already running and this agent "
                    f"runs at most {self.scope.config.max_fanout} at once. Wait for one to "
                    "finish (wait_tasks) or do this part yourself."
                )
        mode = delegate.mode
        if mode == "auto":
            mode = _resolve_auto(description)
        if node is not None or mode == "sync":
            self.runtime.in_flight[key] = self.runtime.in_flight.get(key, 0) + 1
            try:
                return await self._run_sync(ctx, delegate, description, node)
            finally:
                self.runtime.in_flight[key] -= 1
        return await self._start_background(ctx, delegate, description)

    def _background_running(self, ctx: RunContext) -> int:
        return sum(
            1
            for handle in self.library.task_manager.list_handles()
            if not handle.is_finished and handle.parent_run_id == ctx.run_id
        )

    def _child_level(self, delegate: Delegate, task_id: str, node: dict | None) -> Level:
        return Level(
            task_id=task_id,
            billed=task_id if delegate.published else self.level.billed,
            resuming={child["task_call_id"]: child for child in (node or {}).get("delegates", [])},
            created=dict((node or {}).get("created") or {}),
        )

    def _started(self, delegate: Delegate, task_id: str, mode: str, description: str, **extra):
        frame = SubagentStartedFrame(
            type="subagent_started",
            task_id=task_id,
            parent_task_id=self.level.task_id,
            name=delegate.name,
            mode="async" if mode == "async" else "sync",
            description=description[:2000],
            kind="published"
            if delegate.published
            else ("dynamic" if (delegate.definition or {}).get("dynamic") else "inline"),
        )
        if delegate.published:
            frame["agent_id"] = delegate.agent_id
        if delegate.definition is not None:
            frame["definition"] = delegate.definition
        if extra.get("resumed"):
            frame["resumed"] = True
        self.runtime.emit(frame)

    async def _run_sync(
        self, ctx: RunContext, delegate: Delegate, description: str, node: dict | None
    ) -> str:
        runtime = self.runtime
        task_id = node["task_id"] if node else uuid.uuid4().hex[:8]
        level = self._child_level(delegate, task_id, node)
        # Only an author's delegate asks (a specialist the model wrote never does), and only in
        # place: a background delegation has nobody left to answer.
        asks = bool(self.scope.config.allow_questions) and not (delegate.definition or {}).get(
            "dynamic"
        )
        built = _build(delegate, runtime, level, background=False, asks=asks)
        if node:
            built.carried_usd = Decimal(node.get("spent_usd") or "0")
            built.carried_partial = bool(node.get("partial"))
        started_at = dt.datetime.fromisoformat(node["started_at"]) if node else timezone.now()
        self._started(delegate, task_id, "sync", description, **({"resumed": True} if node else {}))
        history = ModelMessagesTypeAdapter.validate_python(node["messages"]) if node else None
        results = _node_results(node, runtime) if node else None
        # Its own step limit (the delegate's spec), counting the requests of its earlier segments.
        used = int(node.get("requests", 0)) if node else 0
        limits = UsageLimits(request_limit=max(1, delegate.max_steps - used))
        meter_token = built.meter.activate()
        outcome = ("completed", "answered", "")
        output = ""
        try:
            async with built.agent.iter(
                None if node else description,
                message_history=history,
                deferred_tool_results=results,
                usage_limits=limits,
                cancellation_token=runtime.token,
            ) as child:
                async for graph_node in child:
                    if Agent.is_model_request_node(graph_node):
                        # A hung provider ends the delegation at its own profile's timeout.
                        deadline = asyncio.timeout(delegate.handle.request_timeout_seconds)
                        try:
                            async with deadline:
                                async with graph_node.stream(child.ctx) as stream:
                                    async for event in stream:
                                        self._frame_of(event, task_id)
                        except TimeoutError as exc:
                            if deadline.expired():
                                raise DelegateTimeout(
                                    delegate.handle.request_timeout_seconds
                                ) from exc
                            raise
                    elif Agent.is_call_tools_node(graph_node):
                        async with graph_node.stream(child.ctx) as stream:
                            async for event in stream:
                                self._frame_of(event, task_id)
                result = child.result.output if child.result is not None else ""
                messages = child.all_messages()
        except BudgetExceeded as exc:
            # A cap binding inside a delegation stops the whole run (the run's caps are the ones
            # that bind): the delegation keeps the cap's own sentence.
            self._finish(
                delegate,
                task_id,
                description,
                started_at,
                built,
                "budget_exceeded",
                "budget",
                exc.sentence,
                "",
            )
            raise
        except UsageLimitExceeded:
            sentence = (
                f"The delegate stopped at its step limit of {delegate.max_steps} model requests "
                "(limits.max_steps) before answering."
            )
            self._finish(
                delegate,
                task_id,
                description,
                started_at,
                built,
                "failed",
                "step_limit",
                sentence,
                "",
            )
            return f"{delegate.name} did not finish: {sentence}"
        except RunCancelled:
            self._finish(
                delegate,
                task_id,
                description,
                started_at,
                built,
                "cancelled",
                "cancelled",
                "The run was cancelled.",
                "",
            )
            raise
        except Exception as exc:
            # The provider's own text may carry a request URL with a key in it: the row and the
            # closing frame keep a controlled sentence; the text goes to the server log.
            if isinstance(exc, (ModelHTTPError, ModelAPIError)):
                from .runner import provider_error_sentence

                logger.warning("delegation %s: provider error: %s", task_id, exc)
                sentence, reason = provider_error_sentence(exc), "provider_error"
            elif isinstance(exc, DelegateTimeout):
                sentence = (
                    f"The model provider did not answer within {exc.seconds:g} seconds (the "
                    "model profile's request timeout)."
                )
                reason = "provider_error"
            else:
                logger.exception("delegation %s failed", task_id)
                sentence, reason = FAILED_SENTENCE, "internal_error"
            self._finish(
                delegate, task_id, description, started_at, built, "failed", reason, sentence, ""
            )
            return f"{delegate.name} failed: {sentence}"
        except BaseException:
            self._finish(
                delegate,
                task_id,
                description,
                started_at,
                built,
                "cancelled",
                "cancelled",
                "The run was cancelled.",
                "",
            )
            raise
        finally:
            built.meter.deactivate(meter_token)
        if isinstance(result, DeferredToolRequests):
            # A gated call inside the delegation: the whole run parks, and this delegation's place
            # is kept as a node of the parked tree (its conversation, its parked calls, its own
            # delegations that parked under it), so approving continues it here.
            self.level.parked[ctx.tool_call_id or task_id] = {
                "task_call_id": ctx.tool_call_id,
                "task_id": task_id,
                "name": delegate.name,
                "agent_id": delegate.agent_id if delegate.published else None,
                "published": delegate.published,
                "description": description,
                "started_at": started_at.isoformat(),
                # What its row needs if the run never continues (approval expired, run cancelled
                # while parked): ``book_abandoned`` writes it from here.
                "parked_at": timezone.now().isoformat(),
                "parent_task_id": self.level.billed,
                "agent_version_id": delegate.agent_version_id,
                "model": {
                    "provider": delegate.handle.provider,
                    "model_name": delegate.handle.model_name,
                    "model_label": delegate.handle.label,
                },
                "requests": used + len(built.meter.records),
                "spent_usd": str(_spent(built)),
                "partial": built.partial,
                "messages": ModelMessagesTypeAdapter.dump_python(messages, mode="json"),
                "approvals": [
                    {
                        "tool_call_id": call.tool_call_id,
                        "tool_name": call.tool_name,
                        "args": _args(call),
                        "metadata": result.metadata.get(call.tool_call_id, {}) or {},
                    }
                    for call in result.approvals
                    # Its own task calls that parked further down are nodes, not approvals.
                    if call.tool_call_id not in level.parked
                ],
                "questions": [
                    {"tool_call_id": call.tool_call_id, "call": _questions_of(call)}
                    for call in result.calls
                    if call.tool_name == ASK_TOOL_NAME
                ],
                "delegates": list(level.parked.values()),
                "created": level.created,
            }
            runtime.emit(
                SubagentParkedFrame(
                    type="subagent_parked", task_id=task_id, cost_usd=str(_spent(built))
                )
            )
            raise ApprovalRequired(metadata={"delegation": task_id})
        output = str(result)
        self._finish(delegate, task_id, description, started_at, built, *outcome, output)
        _record_returns(runtime, node, messages)
        return output

    def _frame_of(self, event, task_id: str) -> None:
        runtime = self.runtime
        if isinstance(event, PartStartEvent) and isinstance(event.part, TextPart):
            if event.part.content:
                runtime.emit(
                    SubagentTextDeltaFrame(
                        type="subagent_text_delta", task_id=task_id, delta=event.part.content
                    )
                )
        elif isinstance(event, PartDeltaEvent) and isinstance(event.delta, TextPartDelta):
            runtime.emit(
                SubagentTextDeltaFrame(
                    type="subagent_text_delta", task_id=task_id, delta=event.delta.content_delta
                )
            )
        elif isinstance(event, FunctionToolCallEvent):
            runtime.emit(
                SubagentToolCallFrame(
                    type="subagent_tool_call",
                    task_id=task_id,
                    tool_name=event.part.tool_name,
                    tool_call_id=event.part.tool_call_id,
                    args=event.part.args_as_json_str(),
                )
            )
        elif isinstance(event, FunctionToolResultEvent):
            runtime.emit(
                SubagentToolResultFrame(
                    type="subagent_tool_result",
                    task_id=task_id,
                    tool_name=event.part.tool_name,
                    tool_call_id=event.part.tool_call_id,
                    content=event.part.model_response_str()[:4000],
                )
            )

    def _finish(
        self,
        delegate: Delegate,
        task_id: str,
        description: str,
        started_at: dt.datetime,
        built: Built | None,
        status: str,
        stop_reason: str,
        error: str,
        output: str,
        ended_at: dt.datetime | None = None,
    ) -> None:
        ended_at = ended_at or timezone.now()
        frame = SubagentFinishedFrame(
            type="subagent_finished",
            task_id=task_id,
            status=status,
            cost_usd=str(_spent(built)),
            cost_is_partial=bool(built and built.partial),
            error=error,
        )
        self.runtime.emit(frame)
        if not delegate.published:
            return  # an inline specialist gets no row: the tool call in the transcript is its record
        self.runtime.records.append(
            DelegationRecord(
                task_id=task_id,
                parent_task_id=self.level.billed,
                agent_id=delegate.agent_id,
                agent_version_id=delegate.agent_version_id or 0,
                name=delegate.name,
                input=description,
                status=status,
                stop_reason=stop_reason,
                error=error[:500],
                output=output,
                started_at=started_at,
                ended_at=ended_at,
                provider=delegate.handle.provider,
                model_name=delegate.handle.model_name,
                model_label=delegate.handle.label,
            )
        )

    async def _start_background(self, ctx: RunContext, delegate: Delegate, description: str) -> str:
        # Built on the library's public task half (TaskManager, TaskHandle, run_with_retry) rather
        # than its private ``_run_async``: the handle's span must start when the delegate really
        # starts (a task cancelled before it ran is zero-length at its end), and its end must be
        # booked however the task ends — ``_run_async`` calls its finish hook from inside the
        # coroutine, which never runs for a task cancelled before its first step.
        from subagents_pydantic_ai import (
            MessageType,
            RetryConfig,
            SubAgentConfig,
            TaskHandle,
            TaskStatus,
            run_with_retry,
            utcnow,
        )

        runtime = self.runtime
        task_id = uuid.uuid4().hex[:8]
        level = self._child_level(delegate, task_id, None)
        built = _build(delegate, runtime, level, background=True)
        self._started(delegate, task_id, "async", description)
        manager = self.library.task_manager
        bus = manager.message_bus
        config = SubAgentConfig(
            name=delegate.name,
            description=delegate.description,
            instructions=delegate.instructions,
            can_ask_questions=False,
        )
        handle = TaskHandle(
            task_id=task_id,
            subagent_name=delegate.name,
            description=description,
            parent_run_id=ctx.run_id,
        )
        inbox = f"subagent-{task_id}"
        bus.register_agent(inbox)

        async def steering() -> list[str]:
            # send_message_to_subagent: the parent's messages reach the delegate before its next
            # request (run_with_retry hands them to pydantic-ai's AgentRun.enqueue).
            messages = await bus.get_messages(inbox, timeout=0)
            return [
                str(m.payload.get("message") if isinstance(m.payload, dict) else m.payload)
                for m in messages
                if m.type == MessageType.TASK_UPDATE and m.payload
            ]

        def soft_cancelled() -> bool:
            event = manager.get_cancel_event(task_id)
            return event is not None and event.is_set()

        async def run() -> None:
            handle.started_at = utcnow()
            meter_token = built.meter.activate()
            try:
                result = await run_with_retry(
                    built.agent,
                    description,
                    run_kwargs={"usage_limits": UsageLimits(request_limit=delegate.max_steps)},
                    retry=RetryConfig.from_config(config),
                    cancel_check=soft_cancelled,
                    inject_messages=steering,
                    event_stream_handler=self._background_events(task_id),
                )
                if isinstance(result.output, DeferredToolRequests):
                    handle.finish(
                        TaskStatus.DEFERRED, error=BACKGROUND_GATE_REFUSAL.format(tool="A tool")
                    )
                else:
                    handle.finish(TaskStatus.COMPLETED, result=str(result.output))
            except asyncio.CancelledError:
                handle.finish(TaskStatus.CANCELLED, error="Task was cancelled")
                raise
            except ApprovalRequired:
                handle.finish(
                    TaskStatus.DEFERRED, error=BACKGROUND_GATE_REFUSAL.format(tool="A tool")
                )
            except Exception as exc:
                # The model reads the exception's class (the library's check_task), never its text.
                handle.finish(TaskStatus.FAILED, error=type(exc).__name__, exception=exc)
            finally:
                built.meter.deactivate(meter_token)
                bus.unregister_agent(inbox)
                manager.cleanup_task(task_id)

        def finished() -> None:
            runtime.live.pop(task_id, None)
            manager.cleanup_task(task_id)
            if not handle.is_finished:
                handle.finish(TaskStatus.CANCELLED, error="Task was cancelled")
            status = {
                TaskStatus.COMPLETED: ("completed", "answered", ""),
                TaskStatus.CANCELLED: ("cancelled", "cancelled", "The delegation was cancelled."),
                # A background delegation that suspends anyway is recorded failed with the same
                # sentence the model reads (seed 000).
                TaskStatus.DEFERRED: (
                    "failed",
                    "internal_error",
                    BACKGROUND_GATE_REFUSAL.format(tool="A tool"),
                ),
            }.get(handle.status, ("failed", "internal_error", FAILED_SENTENCE))
            if handle.status == TaskStatus.FAILED and handle.exception is not None:
                exc = handle.exception
                logger.warning("background delegation %s failed: %r", task_id, exc)
                if isinstance(exc, UsageLimitExceeded):
                    status = (
                        "failed",
                        "step_limit",
                        f"The delegate stopped at its step limit of {delegate.max_steps} model requests (limits.max_steps) before answering.",
                    )
                elif isinstance(exc, BudgetExceeded):
                    status = ("budget_exceeded", "budget", exc.sentence)
                elif isinstance(exc, (ModelHTTPError, ModelAPIError)):
                    from .runner import provider_error_sentence

                    status = ("failed", "provider_error", provider_error_sentence(exc))
            # The span is the handle's own: when the delegate started and when it ended, not
            # when its row was written; a task cancelled before it started is zero-length at
            # its end (seed 003).
            ended = handle.completed_at or timezone.now()
            started = handle.started_at or ended
            self._finish(
                delegate,
                task_id,
                description,
                started,
                built,
                *status,
                handle.result or "",
                ended_at=ended,
            )
            if runtime.outliving and not self.level.task_id:
                # Settled after the run answered: its conversation is told (delegation.outlive).
                runtime.late.append(
                    {
                        "task_id": task_id,
                        "name": delegate.name,
                        "status": status[0],
                        "text": handle.result or status[2],
                    }
                )

        task = manager.create_task(task_id, run(), handle)
        # create_task stamps the handle when the task is created; the span starts when it runs.
        handle.started_at = None
        runtime.live[task_id] = LiveDelegation(
            task=task,
            delegate=delegate,
            description=description,
            billed_to=self.level.billed,
            handle=handle,
        )
        # However the task ends — even cancelled before its first step, when its own code never
        # runs — its end is booked.
        task.add_done_callback(lambda _task: finished())
        return (
            f"Task started in background.\nTask ID: {task_id}\nSubagent: {delegate.name}\n"
            f"Use check_task('{task_id}') to check status."
        )

    def _background_events(self, task_id: str):
        async def handler(ctx, events) -> None:
            async for event in events:
                self._frame_of(event, task_id)

        return handler


def _spent(built: Built | None) -> Decimal:
    if built is None:
        return Decimal("0")
    return built.carried_usd + sum((r.cost_usd for r in built.meter.records), Decimal("0"))


def _questions_of(call) -> list[dict]:
    from pydantic_ai_harness.ask_user import AskUserRequest

    request = AskUserRequest.from_tool_call(call)
    return [question.model_dump(mode="json") for question in request.questions]


def _args(call) -> dict:
    try:
        return call.args_as_dict()
    except Exception:  # broken JSON arguments: shown as text, still decidable
        return {"_raw": call.args_as_json_str()}


def _record_returns(runtime: DelegationRuntime, node: dict | None, messages) -> None:
    """A resumed delegate's parked calls returned: keep what they returned for their steps."""
    if not node:
        return
    from pydantic_ai.messages import ModelRequest, ToolReturnPart

    wanted = {
        a["tool_call_id"]: a for a in [*node.get("approvals", []), *node.get("questions", [])]
    }
    for message in messages:
        if isinstance(message, ModelRequest):
            for part in message.parts:
                if isinstance(part, ToolReturnPart) and part.tool_call_id in wanted:
                    runtime.settled_returns[f"{node['task_id']}/{part.tool_call_id}"] = (
                        part.model_response_str()
                    )


def _node_results(node: dict, runtime: DelegationRuntime) -> DeferredToolResults:
    """The decisions a parked delegate continues with: each of its own parked calls as decided
    (by approval row), and an approval for each of its own task calls that parked further down —
    those continue their delegates in turn, one level lower."""
    approvals: dict[str, Any] = dict(node.get("decisions") or {})
    for child in node.get("delegates", []):
        approvals[child["task_call_id"]] = ToolApproved()
    return DeferredToolResults(approvals=approvals, calls=dict(node.get("answers") or {}))


def build_subagents_toolset(binding, context: ToolsetContext):
    """The subagents builder: nothing attaches without a delegate (or at the depth limit)."""
    at = context.resources.delegation
    if at is None or at.scope.runtime is None:
        return None
    tools = DelegationTools(at)
    toolset = declared_toolset(CAPABILITY_ID, binding, tools.functions(), toolset_id="subagents")
    if toolset is None:
        return None
    offered = set(toolset.tools)
    lifecycle = set(LIFECYCLE_TOOLS) - {"answer_subagent"}
    if at.scope.background_reachable() and not (lifecycle & offered):
        # A pinned delegate preferring async/auto makes background reachable, which the
        # registry's condition (on the binding's config alone) cannot see: offer them too.
        from apps.capabilities.registry import get_capability
        from apps.capabilities.tools._toolsets import (
            CAPABILITY_METADATA,
            TOOL_ID_METADATA,
            _add_tool,
        )

        functions = tools.functions()
        for spec in get_capability(CAPABILITY_ID).tools:
            if spec.id in lifecycle:
                _add_tool(
                    toolset,
                    functions[spec.id],
                    name=spec.id,
                    description=spec.description,
                    metadata={TOOL_ID_METADATA: spec.id, CAPABILITY_METADATA: CAPABILITY_ID},
                )
    return toolset


def register() -> None:
    from apps.capabilities.implementations import register_toolset

    register_toolset(CAPABILITY_ID, build_subagents_toolset)


# --- parking and resuming ------------------------------------------------------------------------


def only_questions(nodes) -> bool:
    """A parked tree waiting on answers alone (no approval anywhere in it)."""
    nodes = list(nodes)
    return bool(nodes) and not any(n.get("approvals") for n in iter_nodes(nodes))


def park_nodes(runtime: DelegationRuntime | None) -> dict[str, dict]:
    """The delegations that parked directly under the run's own agent, by ``task`` call id."""
    return runtime.root.parked if runtime is not None else {}


def leaf_id(task_id: str, tool_call_id: str) -> str:
    """A delegate's parked call's id on its approval row: namespaced by the delegation, since two
    agents of one tree number their tool calls independently."""
    return f"{task_id}/{tool_call_id}"


def iter_nodes(nodes):
    for node in nodes:
        yield node
        yield from iter_nodes(node.get("delegates", []))


def resume_tree(paused_state: dict | None) -> dict[str, dict]:
    """On resume: the parked tree with each node's decisions attached (from its approval rows),
    keyed by the run's own ``task`` call ids."""
    from pydantic_ai_harness.ask_user import DECLINED

    from apps.approvals.models import ApprovalStatus, Question, QuestionStatus, ToolApproval
    from apps.approvals.services import denial_message

    nodes = list((paused_state or {}).get("delegates", []))
    ids = [
        a["approval_id"]
        for n in iter_nodes(nodes)
        for a in n.get("approvals", [])
        if "approval_id" in a
    ]
    rows = {
        row.pk: row for row in ToolApproval.objects.filter(pk__in=ids).select_related("decided_by")
    }
    asked_ids = [
        q["question_id"]
        for n in iter_nodes(nodes)
        for q in n.get("questions", [])
        if "question_id" in q
    ]
    questions = {q.pk: q for q in Question.objects.filter(pk__in=asked_ids)}
    for node in iter_nodes(nodes):
        decisions: dict[str, ToolApproved | ToolDenied] = {}
        for parked in node.get("approvals", []):
            row = rows.get(parked.get("approval_id"))
            if row is None:
                continue
            if row.status == ApprovalStatus.APPROVED:
                decisions[parked["tool_call_id"]] = ToolApproved(override_args=row.arguments)
            elif row.status in (ApprovalStatus.REJECTED, ApprovalStatus.EXPIRED):
                decisions[parked["tool_call_id"]] = ToolDenied(message=denial_message(row))
        node["decisions"] = decisions
        answers: dict[str, Any] = {}
        for asked in node.get("questions", []):
            question = questions.get(asked.get("question_id"))
            if question is None:
                continue
            if question.status == QuestionStatus.ANSWERED:
                answers[asked["tool_call_id"]] = question.answers
            elif question.status in (QuestionStatus.DECLINED, QuestionStatus.EXPIRED):
                answers[asked["tool_call_id"]] = DECLINED
        node["answers"] = answers
    return {node["task_call_id"]: node for node in nodes}


def with_delegation_approvals(results: DeferredToolResults, paused_state: dict | None):
    """The run's own deferred results, plus an approval of each of its ``task`` calls that parked:
    replayed, each finds its delegation's place and continues it instead of delegating again."""
    for node in (paused_state or {}).get("delegates", []):
        results.approvals[node["task_call_id"]] = ToolApproved()
    return results


def pending_records(paused_state: dict | None) -> list[DelegationRecord]:
    return [DelegationRecord.from_json(r) for r in (paused_state or {}).get("delegation_rows", [])]


# --- booking ---------------------------------------------------------------------------------


def _delegated_totals(run, task_id: str) -> dict:
    """A delegation's own spend: its entries of the run's one ledger (every segment's)."""
    from apps.spend.models import EntryKind, LedgerEntry

    return LedgerEntry.objects.filter(ledger__run=run, billed_delegation=task_id).aggregate(
        cost=Sum("cost_usd"),
        input=Sum("input_tokens"),
        output=Sum("output_tokens"),
        requests=Count("pk", filter=Q(kind=EntryKind.MODEL_REQUEST)),
        unpriced=Count("pk", filter=Q(priced=False)),
    )


def _delegated_rows(run) -> dict:
    from .models import Run

    rows: dict = {"": run}
    existing = Run.objects.filter(parent_run__isnull=False, agent_id__isnull=False).filter(
        Q(parent_run=run)
        | Q(parent_run__parent_run=run)
        | Q(parent_run__parent_run__parent_run=run)
    )
    for row in existing:
        rows[row.subagent_task_id] = row
    return rows


def book_delegations(*, run, runtime: DelegationRuntime | None, parking: bool) -> tuple[list, list]:
    """One row per finished delegation of a published agent, under the nearest published
    ancestor's row, costed from its own entries of the run's one ledger (every segment's: the
    ledger outlives a park). A delegation that outlived the run's answer already has its row
    (``running``, written by ``outlive``): that row gets its end. Returns (frames, records still
    waiting for a parked parent); what it books leaves ``runtime.records``."""
    from .choices import RunStatus
    from .models import Run

    if runtime is None or not runtime.records:
        return [], []
    rows = _delegated_rows(run)
    frames: list = []
    pending = list(runtime.records)
    progress = True
    while pending and progress:
        progress = False
        for record in list(pending):
            parent = rows.get(record.parent_task_id)
            if parent is None:
                continue
            pending.remove(record)
            # Removed one by one: background delegations append to this list from the loop
            # while the booking runs on a thread.
            runtime.records.remove(record)
            progress = True
            totals = _delegated_totals(run, record.task_id)
            fields = {
                "status": record.status,
                "stop_reason": record.stop_reason,
                "output": record.output,
                "error": record.error,
                "input_tokens": totals["input"] or 0,
                "output_tokens": totals["output"] or 0,
                "request_count": totals["requests"] or 0,
                "cost_usd": totals["cost"] or Decimal("0"),
                "cost_is_partial": bool(totals["unpriced"]),
                "started_at": record.started_at,
                "ended_at": record.ended_at,
            }
            child = rows.get(record.task_id)
            if child is not None:
                # Its row was written when it outlived the answer: the row gets its end (unless
                # a sweep ended it meanwhile: the worker was thought lost, and it was not).
                Run.objects.filter(
                    pk=child.pk, status__in=[RunStatus.RUNNING, RunStatus.FAILED]
                ).update(last_transition_at=record.ended_at, lease_expires_at=None, **fields)
            else:
                child = Run.objects.create(
                    organization_id=run.organization_id,
                    agent_id=record.agent_id,
                    agent_version_id=record.agent_version_id,
                    user_id=run.user_id,
                    surface=run.surface,
                    parent_run=parent,
                    subagent_task_id=record.task_id,
                    input=record.input,
                    model_label=record.model_label,
                    model_provider=record.provider,
                    model_name=record.model_name,
                    **fields,
                )
            rows[record.task_id] = child
            frames.append(
                SubagentRecordedFrame(
                    type="subagent_recorded", task_id=record.task_id, run_id=child.pk
                )
            )
    # A delegation whose published parent is still parked waits for that parent's row.
    waiting = list(pending)
    if pending and not parking:
        # The parent never finished (the run ended while it was parked, or it failed): its
        # delegations are booked under the run's own row rather than lost.
        for record in pending:
            record.parent_task_id = ""
        more, _ = book_delegations(run=run, runtime=runtime, parking=True)
        frames.extend(more)
        waiting = []
    else:
        for record in pending:
            runtime.records.remove(record)
    return frames, waiting


def book_abandoned(run, *, sentence: str) -> int:
    """A parked run that ends without continuing (its wait expired, it was cancelled while
    parked): every published delegation of its parked tree still gets an honest row — status
    ``cancelled`` with the sentence that ended the run, its span from its first segment's start
    to when it parked, its cost summed over every segment. Finished delegations that were waiting
    for a parked parent are booked too. Returns how many rows it wrote."""
    state = run.paused_state or {}
    runtime = DelegationRuntime(
        organization_id=run.organization_id,
        run_id=run.pk,
        user_id=run.user_id,
        surface=run.surface,
        approval_mode=run.approval_mode,
    )
    runtime.records = pending_records(state)
    for node in iter_nodes(state.get("delegates", [])):
        if not node.get("published") or not node.get("agent_id"):
            continue
        started = dt.datetime.fromisoformat(node["started_at"])
        parked = node.get("parked_at")
        model = node.get("model") or {}
        version_id = node.get("agent_version_id")
        if version_id is None:
            from apps.agents.models import AgentVersion

            # A node parked before its version was kept: the delegate's current version.
            version_id = (
                AgentVersion.objects.filter(agent_id=node["agent_id"])
                .order_by("-number")
                .values_list("pk", flat=True)
                .first()
            )
            if version_id is None:
                continue
        runtime.records.append(
            DelegationRecord(
                task_id=node["task_id"],
                parent_task_id=node.get("parent_task_id", ""),
                agent_id=node["agent_id"],
                agent_version_id=version_id,
                name=node.get("name", ""),
                input=node.get("description", ""),
                status="cancelled",
                stop_reason="cancelled",
                error=sentence[:500],
                output="",
                started_at=started,
                ended_at=dt.datetime.fromisoformat(parked) if parked else started,
                provider=model.get("provider", ""),
                model_name=model.get("model_name", ""),
                model_label=model.get("model_label", ""),
            )
        )
    frames, _ = book_delegations(run=run, runtime=runtime, parking=False)
    return len(frames)


async def stop_background(runtime: DelegationRuntime) -> None:
    """Cancel what still runs in the background when the run stops without answering (cancelled,
    failed, parked); each cancelled delegation is booked by its handle's finish, with its own
    spend. A run that answered leaves them running: ``outlive``."""
    for library in runtime.background:
        try:
            await library.task_manager.cancel_all(None)
        except Exception:  # a teardown that fails must not hide the run's own outcome
            logger.exception("run %s: stopping background delegations failed", runtime.run_id)


class _Stop:
    """What the host's watcher trips for a background delegation that outlived its run's answer:
    a cancel asked of the run (or of the delegation's own row) cancels it."""

    def __init__(self, runtime: DelegationRuntime, task_id: str | None = None) -> None:
        self.runtime = runtime
        self.task_id = task_id

    def cancel(self) -> None:
        for task_id, live in list(self.runtime.live.items()):
            if self.task_id is None or task_id == self.task_id:
                live.task.cancel()


async def outlive(runtime: DelegationRuntime, *, host, run_id: int, send) -> None:
    """The run answered with background delegations still running: they go on, on the same event
    loop, booking into the run's one ledger against the run's caps. Each published one gets its
    row now (``running``, with a lease the host renews, so a worker that dies leaves a row the
    lease sweep ends); each is booked as it settles — its row's end, the run's totals brought up
    to its whole ledger again, a notice on the run's conversation carrying the late spend — and
    the frames go out on the run's stream. A cancel asked of the run, or of a delegated row,
    cancels them (the host's watcher)."""
    if not runtime.live_tasks():
        return
    runtime.outliving = True
    rows = await host.blocking(open_late_rows, run_id, runtime)
    host.follow(run_id, _Stop(runtime))
    for row_id, task_id in rows.items():
        host.follow(row_id, _Stop(runtime, task_id))
    try:
        while live := runtime.live_tasks():
            await asyncio.wait(live, return_when=asyncio.FIRST_COMPLETED)
            await asyncio.sleep(0)  # each finished task's own callback has booked its record
            if runtime.records or runtime.late:
                send(*await host.ending(book_late, run_id, runtime))
    finally:
        for followed in [run_id, *rows]:
            await host.unfollow(followed)
    if runtime.records or runtime.late:
        send(*await host.ending(book_late, run_id, runtime))
    await host.blocking(_release_late, run_id)


async def aclose_models(at: DelegationScopeAt | None, *, keep: ModelHandle) -> None:
    """Close the provider clients the run's delegates were built with (each resolved handle has its
    own connection pool, like the run's), once nothing of the run can still use them — after the
    background delegations settled. ``keep`` is the run's own handle, closed by the runner."""
    if at is None:
        return
    handles: dict[int, ModelHandle] = {}

    def collect(scope: DelegationScope) -> None:
        for delegate in scope.delegates.values():
            handles[id(delegate.handle)] = delegate.handle
            if delegate.scope is not None:
                collect(delegate.scope)
        for handle in scope.dynamic_models.values():
            handles[id(handle)] = handle

    collect(at.scope)
    handles.pop(id(keep), None)
    for handle in handles.values():
        try:
            await handle.aclose()
        except Exception:  # a client that fails to close must not hide the run's own outcome
            logger.warning("closing a delegate's model client failed", exc_info=True)


def _release_late(run_id: int) -> None:
    from .models import Run

    Run.objects.filter(pk=run_id).update(lease_expires_at=None)


def open_late_rows(run_id: int, runtime: DelegationRuntime) -> dict[int, str]:
    """A row ``running`` for each published background delegation that outlives the answer,
    under its nearest published ancestor's row. Returns {row id: task id}."""
    from .choices import RunStatus
    from .models import Run

    run = Run.objects.get(pk=run_id)
    rows = _delegated_rows(run)
    now = timezone.now()
    lease = now + dt.timedelta(seconds=settings.RUN_LEASE_SECONDS)
    # The finished run holds a lease while its delegations outlive it (the watcher renews it):
    # a cancel asked of it then cancels them — an inline specialist's too, which has no row.
    Run.objects.filter(pk=run_id).update(lease_expires_at=lease)
    opened: dict[int, str] = {}
    waiting = {
        task_id: live
        for task_id, live in list(runtime.live.items())
        if live.delegate.published and live.delegate.agent_version_id is not None
    }
    progress = True
    while waiting and progress:
        progress = False
        for task_id, live in list(waiting.items()):
            parent = rows.get(live.billed_to)
            if parent is None:
                continue
            del waiting[task_id]
            progress = True
            if task_id in rows:
                continue
            delegate = live.delegate
            row = Run.objects.create(
                organization_id=run.organization_id,
                agent_id=delegate.agent_id,
                agent_version_id=cast(int, delegate.agent_version_id),
                user_id=run.user_id,
                surface=run.surface,
                parent_run=parent,
                subagent_task_id=task_id,
                status=RunStatus.RUNNING,
                input=live.description,
                model_label=delegate.handle.label,
                model_provider=delegate.handle.provider,
                model_name=delegate.handle.model_name,
                started_at=getattr(live.handle, "started_at", None) or now,
                last_transition_at=now,
                lease_expires_at=lease,
            )
            rows[task_id] = row
            opened[row.pk] = task_id
    return opened


LATE_NOTICE = "Background delegation {name} (task {task_id}) settled after this answer: {text}"


def book_late(run_id: int, runtime: DelegationRuntime) -> list:
    """What settled after the run answered, booked in one transaction: the delegations' rows, the
    run's totals brought up to its whole ledger (the parent row stays the authority: its cost is
    everything its ledger holds, delegates included), and one notice on its conversation per
    delegation of the run's own agent — an assistant turn of the run carrying the late spend as
    its share, so the run's turns still sum to the run, and what the next turn's model reads."""
    from django.db import transaction

    from apps.spend.models import Ledger

    from .choices import MessageRole
    from .models import Message, Run
    from .services import _assistant_turn_cost

    with transaction.atomic():
        run = Run.objects.select_for_update().get(pk=run_id)
        frames, _ = book_delegations(run=run, runtime=runtime, parking=False)
        ledger = Ledger.objects.filter(run_id=run_id).first()
        if ledger is not None:
            Run.objects.filter(pk=run_id).update(
                cost_usd=ledger.cost_usd,
                cost_is_partial=ledger.cost_is_partial,
                input_tokens=ledger.input_tokens,
                output_tokens=ledger.output_tokens,
                request_count=ledger.request_count,
            )
            run.refresh_from_db()
        settled, runtime.late = runtime.late, []
        if run.conversation_id is not None:
            for index, late in enumerate(settled):
                Message.objects.create(
                    conversation_id=run.conversation_id,
                    run=run,
                    role=MessageRole.ASSISTANT,
                    content=LATE_NOTICE.format(**late)[:20000],
                    # The whole late spend rides on the first notice of the batch.
                    cost_usd=_assistant_turn_cost(run, run.cost_usd)
                    if index == 0
                    else Decimal("0"),
                    cost_is_partial=run.cost_is_partial,
                    run_status=run.status,
                )
    return frames


def late_notices(conversation_id: int | None, *, since) -> list:
    """What the next turn's model reads of background delegations that settled after an answer
    it already has: the notices written after ``since`` (when the run whose transcript the turn
    continues was created — anything earlier is already in that transcript). A notice is an
    assistant turn of a run written after that run's own terminal turn."""
    from django.db.models import Exists, OuterRef
    from pydantic_ai.messages import ModelRequest, UserPromptPart

    from .choices import TERMINAL_STATUSES, MessageRole
    from .models import Message

    if conversation_id is None or since is None:
        return []
    terminal = [str(status) for status in TERMINAL_STATUSES]
    earlier_end = Message.objects.filter(
        run_id=OuterRef("run_id"),
        role=MessageRole.ASSISTANT,
        run_status__in=terminal,
        created_at__lt=OuterRef("created_at"),
    )
    notices = (
        Message.objects.filter(
            conversation_id=conversation_id,
            role=MessageRole.ASSISTANT,
            run_status__in=terminal,
            created_at__gt=since,
        )
        .filter(Exists(earlier_end))
        .order_by("created_at", "pk")
        .values_list("content", flat=True)
    )
    return [
        ModelRequest(
            parts=[
                UserPromptPart(
                    content="(A platform notice, not the person's words: a delegation you "
                    "started in the background finished after your answer.)\n" + content
                )
            ]
        )
        for content in notices
    ]
