"""The runner: ``assemble()`` and ``open_meter()`` prepare a run, ``execute_run()`` drives it
through pydantic-ai.

Every surface (API, chat, channels, schedules, resumes after an approval) goes through these two
functions, so budgets, the ledger, step limits and cancellation apply the same everywhere
(seed 003: "cada superficie pasa por un único runner").

Order of a run (docs/runner.md):
1. the API commits the row ``queued`` and enqueues ``execute_run_task`` on commit;
2. the worker claims ``queued → running`` and commits it before the first model call, so a worker
   that dies leaves a row the stale-run reaper can end;
3. ``assemble()`` reads the published version and builds model, instructions, toolsets, the
   run's resources and the step limit, writing nothing (a resume request checks with it);
   ``open_meter()`` then opens the ledger and budget counters and adds the budget guard (a
   pydantic-ai capability) first; ``prepare()`` is the two in a row;
4. the run streams through ``Agent.iter`` — every model request is streamed and its frames
   published — under a cancellation token a watcher trips when someone cancels;
5. a finally block books tokens, cost, the transcript and the outcome with an explicit commit,
   whatever happened.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field, replace
from typing import cast

from asgiref.sync import async_to_sync
from celery import current_task
from django.db import InterfaceError, OperationalError, connection, transaction
from pydantic_ai import (
    Agent,
    AgentRun,
    CancellationToken,
    DeferredToolRequests,
    DeferredToolResults,
    UsageLimits,
)
from pydantic_ai.exceptions import (
    ModelAPIError,
    ModelHTTPError,
)
from pydantic_ai.messages import (
    FunctionToolCallEvent,
    FunctionToolResultEvent,
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelResponse,
    PartDeltaEvent,
    PartStartEvent,
    TextPart,
    TextPartDelta,
    ThinkingPart,
    ThinkingPartDelta,
)
from pydantic_ai.settings import ModelSettings

from apps.agents.models import AgentStatus
from apps.agents.selectors import model_profiles_for
from apps.agents.setup import your_setup_section
from apps.agents.spec import AgentSpec
from apps.agents.validation import SpecNotRunnable, assert_runnable
from apps.approvals.gate import ApprovalGate, ApprovalModeRefused, gate_for_run
from apps.capabilities.registry import get_capability
from apps.capabilities.run_context import RunResources
from apps.capabilities.tools import contributions, planning
from apps.capabilities.tools._blocking import tool_blocking
from apps.capabilities.tools.chart_svg import render_chart_svg
from apps.capabilities.tools.charts import chart_artifact
from apps.capabilities.tools.guardrails import (
    GuardrailBlocked,
    OutputStreamFilter,
    output_stream_filter,
)
from apps.capabilities.tools.media import threshold_of as media_threshold_of
from apps.capabilities.tools.sources import sources_of
from apps.capabilities.tools.system_reminders import ReminderCounters
from apps.capabilities.tools.tool_output_limits import RunSpillStore
from apps.knowledge.selectors import collection_search_for_run, skills_for_run
from apps.mcp.assembly import ConnectionGone, accesses_for_run
from apps.mcp.client import connection_toolset
from apps.memory.ownership import TRIGGER_SURFACES, RunAudience
from apps.memory.selectors import context_files_for_run, mem0_for_run, memory_for_run
from apps.sandbox.services import workspace_open_for_run
from apps.spend.guard import BudgetGuard, RequestRecord, RunMeter
from apps.vault.models import Secret
from apps.vault.services import secret_reveal

from . import media, outcomes, parking, services
from .assembly import Caller, agent_for, toolsets_for
from .choices import RunStatus, StopReason
from .claiming import ClaimedRun
from .delegate_stream import delegate_stream_check
from .delegation.booking import book_delegations, late_notices, open_accruing
from .delegation.lifetime import aclose_models, outlive, stop_background
from .delegation.parked import pending_records, resume_tree
from .delegation.scope import attach_runtime, resolve_scope
from .delegation.types import DelegateNotRunnable, DelegationRuntime, DelegationScopeAt
from .events import (
    CompactionFrame,
    ContextUsageFrame,
    CostFrame,
    Frame,
    FramePublisher,
    RunFinishedFrame,
    RunStartedFrame,
    SourceCard,
    TextDeltaFrame,
    ThinkingDeltaFrame,
    ToolCallFrame,
    ToolResultFrame,
)
from .exposures import exposure_for_run
from .gauge import context_gauge
from .modelbuilder import ModelHandle, ModelUnavailable, build_model, default_model_profile
from .models import Conversation, Run
from .outcomes import INTERNAL_ERROR_SENTENCE, Outcome, ProviderTimeout, RunNotRunnable
from .runtime import InlineHost, RunHost, worker_host
from .search import conversations_for_run
from .selectors import PreviousTurn, previous_turn

logger = logging.getLogger(__name__)

# The longest a held frame (a request's cost and context gauge, a tool call starting) waits for
# the next write before it is written on its own.
HELD_FRAMES_SECONDS = 0.05

PARKED = (RunStatus.AWAITING_APPROVAL, RunStatus.AWAITING_ANSWER)


@dataclass
class Assembly:
    """A run assembled from its published version, before anything is written: what
    :func:`assemble` resolved and built. Validating a run (may it start, may it resume?) is
    assembling it; :func:`open_meter` turns an assembly into a :class:`PreparedRun`."""

    run: Run
    spec: AgentSpec
    model: ModelHandle
    toolsets: list
    instructions: list[str]
    # The capabilities the bindings add (planning's reminder, provider-run web tools), after
    # the guard and the last-attempt arguments, which open_meter() puts first.
    capabilities: list
    model_settings: ModelSettings | None
    approval_gate: ApprovalGate
    resources: RunResources
    user_prompt: str | None
    message_history: list[ModelMessage]
    usage_limits: UsageLimits
    max_steps: int
    unbuilt_capabilities: list[str] = field(default_factory=list)
    # The guardrails' output check, when the run has one (guardrails.output_stream_filter).
    output_filter: OutputStreamFilter | None = None
    # The run's delegation tree (apps/runs/delegation.py), when its agent delegates.
    delegation: DelegationRuntime | None = None


@dataclass
class PreparedRun:
    """A run ready to execute: everything it needs, resolved before the first model request."""

    run: Run
    agent: Agent
    model: ModelHandle
    user_prompt: str | None
    message_history: list[ModelMessage]
    usage_limits: UsageLimits
    max_steps: int
    meter: RunMeter
    guard: BudgetGuard
    unbuilt_capabilities: list[str] = field(default_factory=list)
    deferred_tool_results: DeferredToolResults | None = None
    # What the capabilities were handed (the plan, context files); read back at the end.
    resources: RunResources = field(default_factory=RunResources)
    approval_gate: ApprovalGate | None = None
    # The guardrails' output check: text and reasoning held until each part is checked.
    output_filter: OutputStreamFilter | None = None
    delegation: DelegationRuntime | None = None


def _assert_runnable(version, model_profile) -> None:
    """Today's publish rules again, on the frozen version (a version published before a rule
    existed is refused with the sentence that says what to change)."""
    try:
        assert_runnable(version, model_profile=model_profile)
    except SpecNotRunnable as exc:
        changes = "; ".join(str(error) for error in exc.errors)
        raise RunNotRunnable(f"The agent's published version cannot run: {changes}"[:480]) from exc


def _history_of(run: Run, *, resume: bool, previous: PreviousTurn | None) -> list[ModelMessage]:
    # Restored whether or not the agent still binds media: its stored parts go back inline.
    def restored(stored) -> list[ModelMessage]:
        if not stored:
            return []
        return ModelMessagesTypeAdapter.validate_python(
            media.restored_transcript(
                stored, organization_id=run.organization_id, conversation_id=run.conversation_id
            )
        )

    if resume:
        return restored(run.transcript)
    if run.conversation_id is None:
        return []
    if previous is None:
        previous = previous_turn(run)
    # What background delegations settled after an answer that transcript already holds.
    late = late_notices(run.conversation_id, since=previous.created_at)
    return restored(previous.transcript) + late


def run_audience(run: Run) -> RunAudience:
    """Who hears this run's answer: what the memory store and the conversation corpus follow
    (apps.memory.ownership). A trigger's run (``schedule`` / ``event``) has a user exactly when
    the trigger runs as its creator (apps.triggers fires it as them, or as no one), so that is
    what ``runs_as_creator`` reads; ``ownership.trigger_memory_scope`` applies the rule."""
    conversation = run.conversation if run.conversation_id else None
    return RunAudience(
        surface=run.surface,
        user_id=run.user_id,
        group_chat_key=conversation.group_chat_key if conversation is not None else "",
        runs_as_creator=run.surface in TRIGGER_SURFACES and run.user_id is not None,
    )


def resolve_resources(run: Run, spec: AgentSpec, bound: set[str], *, resume: bool) -> RunResources:
    """What the bound capabilities' tools will read, resolved now (a tool never reaches into the
    database itself): one object shared by every builder and contribution."""
    resources = RunResources()
    if bound & {"memory_files", "memory_mem0", "conversation_search"}:
        audience = run_audience(run)
    if "memory_files" in bound:
        resources.memory = memory_for_run(
            organization=run.organization, agent_id=run.agent_id, run_id=run.pk, audience=audience
        )
    if "memory_mem0" in bound:
        resources.mem0 = mem0_for_run(
            organization=run.organization, agent_id=run.agent_id, audience=audience
        )
    if "conversation_search" in bound:
        resources.conversations = conversations_for_run(
            run.organization_id, audience, current_conversation_id=run.conversation_id
        )
    if "planning" in bound:
        # A resume continues the parked state's plan; a new turn opens with the conversation's.
        parked_plan = (run.paused_state or {}).get("plan") if resume else None
        stored_plan = run.conversation.plan if run.conversation is not None else None
        resources.plan = planning.seed_plan(stored=stored_plan, parked=parked_plan)
    if "context" in bound:
        resources.context_files = context_files_for_run(run.organization_id, spec.context_ids)
    if "knowledge" in bound:
        resources.knowledge = collection_search_for_run(
            run.organization_id, spec.knowledge_collections
        )
    if "skills" in bound:
        resources.skills = skills_for_run(run.organization_id, spec.skill_ids)
    if "system_reminders" in bound:
        stored = run.conversation.reminder_counters if run.conversation is not None else None
        resources.reminder_counters = ReminderCounters.seed(stored)
    if "tool_output_limits" in bound:
        # No workspace yet (the sandbox issue plugs one in): spills live in memory, for this run.
        resources.tool_output_store = RunSpillStore()
    if "media" in bound:
        resources.media_threshold_bytes = media_threshold_of(spec.enabled_bindings())
    if "sandbox" in bound:
        binding = spec.binding("sandbox")
        assert binding is not None  # "sandbox" is among the bound capabilities
        resources.sandbox = workspace_open_for_run(
            run=run, config=get_capability("sandbox").parse_config(binding.config)
        )
    return resources


def _write_back_plan(run: Run, prepared: PreparedRun | None, status: str) -> None:
    """The plan belongs to the conversation: store what this turn left of it."""
    if prepared is None or prepared.resources.plan is None or run.conversation_id is None:
        return
    written = planning.write_back(prepared.resources.plan, run_status=status)
    if written.write:
        Conversation.objects.filter(pk=run.conversation_id).update(plan=written.value)


def _write_back_reminder_counters(run: Run, prepared: PreparedRun | None) -> None:
    """The reminders' cadence belongs to the conversation: keep where this turn left it."""
    if prepared is None or run.conversation_id is None:
        return
    counters = prepared.resources.reminder_counters
    if counters is not None:
        Conversation.objects.filter(pk=run.conversation_id).update(
            reminder_counters=counters.as_json()
        )


def _binding_secret(organization, binding) -> str | None:
    """The decrypted key of a binding's vault secret, or None when it has none."""
    if binding.secret_id is None:
        return None
    secret = Secret.objects.filter(organization=organization, pk=binding.secret_id).first()
    if secret is None:
        raise RunNotRunnable(f"The key of the {binding.id} capability is no longer in the vault.")
    return secret_reveal(secret)


def _mcp_toolsets(organization, spec: AgentSpec, bindings) -> list:
    """The bound MCP connections' toolsets (apps.mcp), deferred behind tool search when the agent
    binds it. Nothing is dialled here: the server is reached when the run enters its toolsets,
    before the first model request, and an unreachable one ends the run naming it."""
    bound = spec.enabled_mcp_connections()
    if not bound:
        return []
    defer = any(binding.id == "tool_search" for binding in bindings)
    try:
        accesses = accesses_for_run(organization.pk, bound)
    except ConnectionGone as exc:
        raise RunNotRunnable(exc.sentence) from exc
    return [connection_toolset(access, defer=defer) for access in accesses]


def _resolve_delegation(run, spec, bindings, handle, gate, resources, resume):
    """The subagents capability's delegates, resolved now (pins, versions, profiles, keys, down
    the tree); a pin that cannot run refuses the run naming the delegate."""
    try:
        scope = resolve_scope(
            organization=run.organization,
            spec=spec,
            bindings=bindings,
            handle=handle,
            agent_id=run.agent_id,
        )
    except DelegateNotRunnable as exc:
        raise RunNotRunnable(exc.sentence[:480]) from exc
    if scope is None:
        return None
    runtime = DelegationRuntime(
        organization_id=run.organization_id,
        run_id=run.pk,
        user_id=run.user_id,
        surface=run.surface,
        approval_mode=gate.mode,
    )
    if resume:
        runtime.root.resuming = resume_tree(run.paused_state)
        runtime.root.created = dict((run.paused_state or {}).get("dynamic_specialists") or {})
        runtime.records = pending_records(run.paused_state)
    attach_runtime(scope, runtime)
    resources.delegation = DelegationScopeAt(scope, runtime.root)
    return runtime


def _own_requests(run: Run) -> int:
    from apps.spend.models import EntryKind, LedgerEntry

    return LedgerEntry.objects.filter(
        ledger__run=run, delegation="", kind=EntryKind.MODEL_REQUEST
    ).count()


def assemble(run: Run, *, resume: bool = False, claimed: ClaimedRun | None = None) -> Assembly:
    """The single funnel's first half: a new or resumed run assembled from its published version
    — model, instructions, toolsets, the approval gate, the step limit — reading only.
    ``claimed``: what the worker's claim read with the run (its previous turn, its model
    profile: apps/runs/claiming.py), so it is not looked up again.

    ``RunNotRunnable`` (with the sentence the person sees) when the run cannot start or continue;
    nothing is written either way, so a resume request can check with it before it enqueues."""
    version = run.agent_version
    agent_row = run.agent
    if agent_row.status == AgentStatus.ARCHIVED:
        raise RunNotRunnable("The agent is archived.")
    spec = version.frozen_spec
    organization = run.organization
    # The profile the spec names is read once: the publish rules look for it, the run talks to it.
    named_profile = claimed.model_profile if claimed is not None else None
    if spec.model_profile_id is None:
        named_profile = None
    elif named_profile is None or named_profile.pk != spec.model_profile_id:
        named_profile = model_profiles_for(organization).filter(pk=spec.model_profile_id).first()
    _assert_runnable(version, named_profile)
    # The session's approval mode is checked here, the one funnel a new and a resumed run share:
    # a mode the session may not have refuses the turn with a sentence (seed 003).
    try:
        approval_gate = gate_for_run(run, spec)
    except ApprovalModeRefused as exc:
        raise RunNotRunnable(exc.sentence) from exc

    try:
        handle = build_model(named_profile or default_model_profile(organization))
    except ModelUnavailable as exc:
        raise RunNotRunnable(exc.sentence) from exc

    bindings = spec.enabled_bindings()
    # A chat binding's run: its prompt, and the capabilities granted on the binding row
    # (channel_tools is never in a spec) — apps/runs/exposures.py.
    exposure = exposure_for_run(run)
    if exposure is not None:
        bindings = [*bindings, *exposure.bindings]
    native_refusals = contributions.run_native_refusals(bindings, handle.model)
    if native_refusals:
        raise RunNotRunnable(" ".join(native_refusals)[:480])
    resources = resolve_resources(run, spec, {b.id for b in bindings}, resume=resume)
    resources.model_context_window = handle.context_window
    if exposure is not None:
        resources.channel = exposure.channel
    runtime = _resolve_delegation(run, spec, bindings, handle, approval_gate, resources, resume)
    toolsets, unbuilt = toolsets_for(
        bindings,
        resources,
        caller=Caller(
            organization_id=organization.pk,
            agent_id=agent_row.pk,
            run_id=run.pk,
            user_id=run.user_id,
            surface=run.surface,
        ),
        handle=handle,
        secret_of=lambda binding: _binding_secret(organization, binding),
        more=_mcp_toolsets(organization, spec, bindings),
    )

    instructions = [
        text
        for text in (
            spec.instructions,
            your_setup_section(spec),
            *contributions.run_instructions(bindings, resources),
            resources.delegation.scope.instructions() if resources.delegation else None,
            exposure.instructions if exposure is not None else None,
        )
        if text
    ]
    max_steps = spec.limits.max_steps
    # A resumed run's step limit counts the requests of its earlier segment too — its own: a
    # delegate's requests count against the delegate's own limit, not its parent's.
    remaining = max(1, max_steps - _own_requests(run)) if resume else max_steps
    return Assembly(
        run=run,
        spec=spec,
        model=handle,
        toolsets=toolsets,
        instructions=instructions,
        capabilities=contributions.run_capabilities(bindings, resources),
        model_settings=cast(
            ModelSettings | None,
            contributions.run_model_settings(bindings, handle.provider) or None,
        ),
        approval_gate=approval_gate,
        resources=resources,
        user_prompt=None if resume else run.input,
        message_history=_history_of(
            run, resume=resume, previous=claimed.previous if claimed is not None else None
        ),
        usage_limits=UsageLimits(request_limit=remaining),
        max_steps=max_steps,
        unbuilt_capabilities=unbuilt,
        output_filter=output_stream_filter(bindings),
        delegation=runtime,
    )


def open_meter(assembly: Assembly, *, deferred_tool_results=None, db=None) -> PreparedRun:
    """The funnel's second half: open the run's meter (its ledger and budget counters) and build
    the pydantic-ai agent with the budget guard first.

    ``db`` is the session the run's event loop sends the guard's statements on (its host's,
    apps/runs/runtime.py); by default this thread's own (agenticos/loopdb.py)."""
    run, spec = assembly.run, assembly.spec
    meter = RunMeter.open(
        run=run,
        provider=assembly.model.provider,
        model_name=assembly.model.model_name,
        agent_limit_usd=spec.budget.monthly_usd,
        org_limit_usd=run.organization.monthly_budget_usd,
        db=db,
        agent_warn_at=spec.alerts.budget.warn_at,
    )
    if assembly.delegation is not None:
        # Every delegate books into this meter's ledger, against this run's caps.
        assembly.delegation.meter = meter
    agent, guard = agent_for(
        handle=assembly.model,
        meter=meter,
        gate=assembly.approval_gate,
        toolsets=assembly.toolsets,
        instructions=assembly.instructions,
        capabilities=assembly.capabilities,
        model_settings=assembly.model_settings,
        name=f"agent-{run.agent_id}",
    )
    return PreparedRun(
        run=run,
        agent=agent,
        model=assembly.model,
        user_prompt=assembly.user_prompt,
        message_history=assembly.message_history,
        usage_limits=assembly.usage_limits,
        max_steps=assembly.max_steps,
        meter=meter,
        guard=guard,
        unbuilt_capabilities=assembly.unbuilt_capabilities,
        deferred_tool_results=deferred_tool_results,
        resources=assembly.resources,
        approval_gate=assembly.approval_gate,
        output_filter=assembly.output_filter,
        delegation=assembly.delegation,
    )


def prepare(run: Run, *, resume: bool = False, deferred_tool_results=None, db=None) -> PreparedRun:
    """Assemble the run and open its meter: what a worker does once it has claimed the run."""
    return open_meter(
        assemble(run, resume=resume), deferred_tool_results=deferred_tool_results, db=db
    )


@dataclass
class DriveState:
    """What the drive loop saw, kept even when it ends by an exception."""

    agent_run: AgentRun | None = None
    output: str | None = None
    partial_text: list[str] = field(default_factory=list)
    messages: list[ModelMessage] | None = None
    # The calls the run parked on (a gated call, a question), when it ended on them.
    deferred: DeferredToolRequests | None = None
    # A guardrail ended the run at this edge ("out", "args", ...).
    blocked_edge: str | None = None
    # A compaction setting that cannot work, as the chat was told (once per run), with the index
    # of the request it preceded: booked on that request's step, so a reload says it again.
    compaction_skipped: dict | None = None


async def drive(
    prepared: PreparedRun,
    frames: FramePublisher | None,
    state: DriveState,
    host: RunHost | None = None,
    token: CancellationToken | None = None,
) -> None:
    """Run the agent through pydantic-ai's own loop, streaming each node's events as frames.

    ``token`` is tripped by a cancel request; without one, drive() has ``host`` (by default a
    watcher of this run alone, on the meter's session) watch for it while it runs."""
    run_id = prepared.run.pk
    watched_here = token is None
    if watched_here:
        host = host if host is not None else RunHost(prepared.meter.db)
        token = CancellationToken()
        host.follow(run_id, token)
    send = frames.send if frames is not None else (lambda *frames: None)
    loop = asyncio.get_running_loop()
    timeout_seconds = prepared.model.request_timeout_seconds

    def hold(*held: Frame) -> None:
        # A frame nobody waits on to the millisecond rides with the next write (docs/live-runs.md).
        if frames is None:
            return
        if not frames.holding:
            loop.call_later(HELD_FRAMES_SECONDS, frames.release)
        frames.hold(*held)

    def settled(record: RequestRecord) -> None:
        hold(
            CostFrame(
                type="cost",
                request=record.number,
                input_tokens=record.input_tokens,
                output_tokens=record.output_tokens,
                cost_usd=str(record.cost_usd),
                cost_is_partial=not record.priced,
            ),
            # The context gauge: the provider's own input tokens of this request (seed 003).
            ContextUsageFrame(
                type="context_usage",
                **(context_gauge(record.input_tokens, prepared.model.context_window) or {}),
            ),
        )

    prepared.guard.on_settled = settled
    # A delegate's streamed text passes the parent's output check before it is sent.
    delegate_check = delegate_stream_check(prepared.output_filter, send)
    if prepared.delegation is not None:
        prepared.delegation.token = token
        prepared.delegation.send = delegate_check or send

    # A summary is a whole model request between two of the turn's own, during which nothing
    # else streams: the chat is told what is being summarized while it happens.
    def compaction(payload: dict) -> None:
        frame = CompactionFrame(
            type="compaction", phase=payload["phase"], strategy=payload["strategy"]
        )
        frame.update({k: v for k, v in payload.items() if k not in frame})  # type: ignore[typeddict-item]
        send(frame)
        if payload["phase"] == "skipped":
            state.compaction_skipped = {**payload, "request": len(prepared.meter.records)}

    prepared.resources.on_compaction = compaction

    meter_token = prepared.meter.activate()
    try:
        async with prepared.agent.iter(
            prepared.user_prompt,
            message_history=prepared.message_history or None,
            usage_limits=prepared.usage_limits,
            cancellation_token=token,
            deferred_tool_results=prepared.deferred_tool_results,
        ) as agent_run:
            state.agent_run = agent_run
            async for node in agent_run:
                if Agent.is_model_request_node(node):
                    # A hung provider ends this run at its profile's timeout; the loop's other
                    # runs never waited on it (docs/runner.md "Provider timeouts").
                    deadline = asyncio.timeout(timeout_seconds)
                    try:
                        async with deadline:
                            async with node.stream(agent_run.ctx) as stream:
                                async for event in stream:
                                    _model_event_frame(event, send, state, prepared.output_filter)
                                if prepared.output_filter is not None:
                                    _send_checked(prepared.output_filter.flush(), send, state)
                    except TimeoutError as exc:
                        if deadline.expired():
                            raise ProviderTimeout(timeout_seconds) from exc
                        raise
                elif Agent.is_call_tools_node(node):
                    async with node.stream(agent_run.ctx) as tool_events:
                        async for event in tool_events:
                            frame = _tool_event_frame(event, hold)
                            if frame is not None:
                                if delegate_check is not None:
                                    # Before a delegation's answer is shown or read.
                                    delegate_check.raise_if_blocked()
                                await _draw_chart(frame, event)
                                send(frame)
                if delegate_check is not None:
                    delegate_check.raise_if_blocked()
            if delegate_check is not None:
                delegate_check.flush()
                delegate_check.raise_if_blocked()
            output = agent_run.result.output if agent_run.result is not None else ""
            if isinstance(output, DeferredToolRequests):
                state.deferred, output = output, ""
            elif prepared.delegation is not None:
                # Answered: a background delegation settling from now on is one the model never
                # read, so its conversation is told (delegation/lifetime.py).
                prepared.delegation.outliving = True
            state.output = str(output)
    except GuardrailBlocked as exc:
        state.blocked_edge = exc.edge
        raise
    finally:
        if prepared.delegation is not None and (state.output is None or state.deferred is not None):
            # A background delegation still running when the run stops without answering is
            # cancelled (and booked with what it spent); after an answer it outlives the run
            # (outlive, from execute_run_async).
            await stop_background(prepared.delegation)
        if watched_here and host is not None:
            # A look already sent is read to its end (loopdb) before the session is used again.
            await host.unfollow(run_id)
        prepared.meter.deactivate(meter_token)
        if frames is not None:
            frames.release()  # nothing of this run's loop follows for held frames to ride with
        if state.agent_run is not None:
            try:
                state.messages = state.agent_run.all_messages()
            except Exception:  # a run that died before its first node has no history to keep
                logger.warning("run %s: no message history to record", run_id, exc_info=True)
            if state.blocked_edge in ("out", "args") and state.messages:
                # Nothing of a blocked answer (or call) is shown or stored.
                state.messages = _without_blocked_response(state.messages)


def _without_blocked_response(messages: list[ModelMessage]) -> list[ModelMessage]:
    if messages and isinstance(messages[-1], ModelResponse):
        return messages[:-1]
    return messages


def _send_checked(released, send, state: DriveState) -> None:
    for kind, text in released:
        if kind == "text":
            state.partial_text.append(text)
            send(TextDeltaFrame(type="text_delta", delta=text))
        else:
            send(ThinkingDeltaFrame(type="thinking_delta", delta=text))


def _model_event_frame(
    event, send, state: DriveState, output_filter: OutputStreamFilter | None = None
) -> None:
    if output_filter is not None:
        # A guarded output arrives part by part, each checked before anyone sees it.
        _send_checked(output_filter.feed(event), send, state)
        return
    if isinstance(event, PartStartEvent):
        if isinstance(event.part, TextPart) and event.part.content:
            state.partial_text.append(event.part.content)
            send(TextDeltaFrame(type="text_delta", delta=event.part.content))
        elif isinstance(event.part, ThinkingPart) and event.part.content:
            send(ThinkingDeltaFrame(type="thinking_delta", delta=event.part.content))
    elif isinstance(event, PartDeltaEvent):
        if isinstance(event.delta, TextPartDelta):
            state.partial_text.append(event.delta.content_delta)
            send(TextDeltaFrame(type="text_delta", delta=event.delta.content_delta))
        elif isinstance(event.delta, ThinkingPartDelta) and event.delta.content_delta:
            send(ThinkingDeltaFrame(type="thinking_delta", delta=event.delta.content_delta))


def _tool_event_frame(event, hold) -> ToolResultFrame | None:
    """A tool call starting is held (it rides with the next write); a tool result is returned,
    to be sent once its chart, if any, is drawn."""
    if isinstance(event, FunctionToolCallEvent):
        hold(
            ToolCallFrame(
                type="tool_call",
                tool_name=event.part.tool_name,
                tool_call_id=event.part.tool_call_id,
                args=event.part.args_as_json_str(),
            )
        )
    elif isinstance(event, FunctionToolResultEvent):
        part = event.part
        frame = ToolResultFrame(
            type="tool_result",
            tool_name=part.tool_name,
            tool_call_id=part.tool_call_id,
            content=part.model_response_str(),
        )
        sources = sources_of(getattr(part, "metadata", None))
        if sources:
            # A fetched page or search results: the console draws a source card from these.
            frame["sources"] = cast(list[SourceCard], sources)
        return frame
    return None


async def _draw_chart(frame: ToolResultFrame, event) -> None:
    chart = chart_artifact(getattr(event.part, "metadata", None))
    if chart is not None:
        # Drawn here, escaped, so a browser inserts it as is (the same drawing as on reload); on a
        # thread, so a large chart never stalls the other runs this loop streams.
        frame["chart_svg"] = await asyncio.to_thread(render_chart_svg, chart)


def outcome_of(exc: BaseException | None, prepared: PreparedRun | None) -> Outcome:
    """The run's own end, through the one mapping (apps/runs/outcomes.py)."""
    return outcomes.outcome_of(exc, max_steps=prepared.max_steps if prepared is not None else "its")


class RunClaimUnavailable(Exception):
    """The run could not even be claimed (the database refused a connection, "too many
    clients"...): nothing ran and nothing was booked, so the task tries again later."""


def _on_a_worker_slot() -> bool:
    """Is this thread executing a Celery task (a worker's pool slot), rather than a test, a
    request or the benchmark calling the runner directly?"""
    request = getattr(current_task, "request", None)
    return bool(request is not None and request.id is not None and not request.is_eager)


def execute_run(
    run_id: int,
    *,
    resume: bool = False,
    deferred_tool_results=None,
    assembly: Assembly | None = None,
) -> str | None:
    """Claim the run, drive it, and book the result whatever happens. Returns the final status.

    ``assembly`` is the run already assembled by a caller that had to check it first (a resume:
    apps/runs/resume.py), so a run is validated once; without one it is assembled after the
    claim. Called from a worker's task, the run goes to the process's event loop beside the
    others; called directly (tests, the benchmark), it runs on this thread's session, inside its
    transaction if any."""
    arguments = {"resume": resume, "deferred_tool_results": deferred_tool_results}
    if assembly is not None:
        arguments["assembly"] = assembly
    if _on_a_worker_slot():
        host = worker_host()
        if not connection.in_atomic_block:
            # This slot only waits from here on: its connection goes back to the pool meanwhile.
            connection.close()
        return host.run(execute_run_async(run_id, host=host, **arguments))
    return async_to_sync(execute_run_async)(run_id, host=InlineHost(), **arguments)


def _claim(run_id: int, *, resume: bool) -> ClaimedRun | None:
    """The claim and the rows, in one trip to the blocking threads; None when not claimable."""
    try:
        return services.run_claim_running(run_id, resume=resume)
    except (OperationalError, InterfaceError) as exc:
        raise RunClaimUnavailable(str(exc)) from exc


def _prepare_claimed(
    claimed: ClaimedRun, assembly: Assembly | None, *, resume: bool, deferred_tool_results, db
) -> PreparedRun:
    """The claimed run prepared: assembled now, or from the assembly a caller checked before
    the claim (then the claimed row is the one the run books against)."""
    assembly = (
        assemble(claimed.run, resume=resume, claimed=claimed)
        if assembly is None
        else replace(assembly, run=claimed.run)
    )
    return open_meter(assembly, deferred_tool_results=deferred_tool_results, db=db)


async def execute_run_async(
    run_id: int,
    *,
    host: RunHost,
    resume: bool = False,
    deferred_tool_results=None,
    assembly: Assembly | None = None,
) -> str | None:
    """The life of one run on ``host``'s event loop: claim, prepare, drive, book its end.

    Blocking ORM work goes through ``host.blocking`` (the worker's small thread pool, or the
    calling thread inline); the guard's statements and the cancel watcher use ``host.db``."""
    claimed = await host.blocking(_claim, run_id, resume=resume)
    if claimed is None:
        logger.info("run %s was not claimable (cancelled, reaped or already running)", run_id)
        return None
    run = claimed.run
    # Opening the publisher (a connection; for a resumed segment, a read of the stream's top) and
    # closing it (waiting for every reply) are round trips to Redis: on a thread, never blocking
    # the loop's other runs.
    frames = await asyncio.to_thread(FramePublisher, run.pk, fresh=not resume)
    prepared: PreparedRun | None = None
    state = DriveState()
    failure: BaseException | None = None
    # Watched from the claim on: a cancel asked while the run is being assembled (a busy worker
    # assembles several at once) stops it before its first request.
    token = CancellationToken()
    host.follow(run_id, token)
    try:
        # One trip to the blocking threads: a second would queue behind the other runs' work.
        prepared = await host.blocking(
            _prepare_claimed,
            claimed,
            assembly,
            resume=resume,
            deferred_tool_results=deferred_tool_results,
            db=host.db,
        )
        frames.send(RunStartedFrame(type="run_started", model_label=prepared.model.label))
        # A tool's blocking store call (memory notes, conversation search) goes through this
        # run's host, like the runner's own ORM work.
        blocking_token = tool_blocking.set(host.blocking)
        try:
            await drive(prepared, frames, state, host, token)
        finally:
            tool_blocking.reset(blocking_token)
    except BaseException as exc:  # every failure is named in the outcome below and logged here
        failure = exc
        if isinstance(exc, (ModelHTTPError, ModelAPIError, ProviderTimeout)):
            logger.warning("run %s: provider error: %s", run_id, exc)
        elif outcome_of(exc, prepared).stop_reason == StopReason.INTERNAL_ERROR:
            logger.exception("run %s failed", run_id)
    finally:
        # A look already sent is read to its end (loopdb) before the session books the end.
        await host.unfollow(run_id)
    outcome = outcome_of(failure, prepared)
    deferred = state.deferred if failure is None else None
    if deferred is not None:
        # Parked on a gated call or a question: a wait, not an end (apps.approvals.parking).
        outcome = Outcome(
            parking.parked_status(deferred, prepared.delegation if prepared else None), ""
        )
    booking = {
        "run": run,
        "model": prepared.model if prepared else None,
        "records": prepared.meter.records if prepared else [],
        "messages": state.messages,
        "output": state.output if state.output is not None else "".join(state.partial_text),
        "compaction_skipped": state.compaction_skipped,
    }
    # Booked whatever happened, even when the run's own task is being cancelled (a worker
    # shutting down): the booking runs to its end before the cancellation goes on.
    booked = asyncio.ensure_future(
        host.ending(_book_end, run_id, outcome, booking, prepared, deferred, state.messages, resume)
    )
    try:
        finished, parked_frames = await asyncio.shield(booked)
    except asyncio.CancelledError:
        finished, parked_frames = await booked
        failure = failure or asyncio.CancelledError()
    frames.send(
        *parked_frames,
        RunFinishedFrame(
            type="run_finished",
            status=finished.status,
            cost_usd=str(finished.cost_usd),
            cost_is_partial=finished.cost_is_partial,
            error=finished.error,
        ),
    )
    if prepared is not None and prepared.delegation is not None:
        # Background delegations still running outlive the answer: settled and booked here.
        await outlive(prepared.delegation, host=host, run_id=run_id, send=frames.send)
    await asyncio.to_thread(frames.close)
    if prepared is not None:
        await prepared.model.aclose()
        await aclose_models(prepared.resources.delegation, keep=prepared.model)
    if failure is not None and not isinstance(failure, Exception):
        raise failure  # KeyboardInterrupt / SystemExit / cancellation: booked above, then stop
    return finished.status


def _stored_transcript(run: Run, prepared: PreparedRun | None, messages) -> list[dict]:
    """The transcript as booked: the large parts in storage when the agent binds media."""
    threshold = prepared.resources.media_threshold_bytes if prepared is not None else None
    return media.transcript_for_storage(
        messages,
        organization_id=run.organization_id,
        conversation_id=run.conversation_id,
        threshold=threshold,
    )


def _book_end(
    run_id, outcome, booking, prepared, deferred, messages, resume
) -> tuple[Run, list[Frame]]:
    """The run's end, its approval rows, questions and parked steps, committed together."""
    run = booking["run"]
    parked_frames: list[Frame] = []
    if messages is not None:
        # Written to storage before the transaction: a blob is no row to roll back (media.py).
        booking = {**booking, "transcript": _stored_transcript(run, prepared, messages)}
    try:
        with transaction.atomic():
            finished = services.run_finish(outcome=outcome, **booking)
            parked_frames = parking.after_run(
                run=finished,
                prepared=prepared,
                deferred=deferred,
                messages=messages,
                resumed=resume,
            )
            if prepared is not None and prepared.delegation is not None:
                # The delegations that finished in this segment get their rows, in the same
                # transaction as the run's end (apps/runs/delegation.py).
                recorded, waiting = book_delegations(
                    run=finished, runtime=prepared.delegation, parking=finished.status in PARKED
                )
                parked_frames.extend(recorded)
                runtime = prepared.delegation
                if (
                    runtime.outliving
                    and runtime.background_started
                    and finished.status == RunStatus.COMPLETED
                ):
                    # Not final yet: what it started in the background still books under it.
                    open_accruing(finished, runtime)
                if waiting:
                    state = Run.objects.get(pk=run_id).paused_state or {}
                    state["delegation_rows"] = [record.as_json() for record in waiting]
                    Run.objects.filter(pk=run_id).update(paused_state=state)
    except Exception:
        logger.exception("run %s: booking its end failed", run_id)
        # A savepoint of its own when the caller holds a transaction (a trigger's fire drives its
        # run inside one): a second failure rolls back this booking, not the caller's work.
        with transaction.atomic():
            finished = services.run_finish(
                outcome=Outcome(
                    RunStatus.FAILED,
                    StopReason.INTERNAL_ERROR,
                    INTERNAL_ERROR_SENTENCE.format(subject="run"),
                ),
                **booking,
            )
    _write_back_plan(run, prepared, finished.status)
    _write_back_reminder_counters(run, prepared)
    return finished, parked_frames
