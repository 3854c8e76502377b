"""The subagents toolset: ``task`` and its companions, and each delegation's agent, built
through the runner's one assembly (``apps.runs.assembly.agent_for``) and ended through its one
outcome mapping (``apps.runs.outcomes.outcome_of``). No database here: everything was resolved."""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import uuid
from decimal import Decimal
from typing import Any, cast

from django.conf import settings
from django.utils import timezone
from pydantic_ai import Agent, DeferredToolRequests, RunContext, UsageLimits
from pydantic_ai.exceptions import (
    ApprovalRequired,
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
from pydantic_ai.tools import DeferredToolResults, ToolApproved

from apps.approvals.gate import ASK_TOOL_NAME, ApprovalGate
from apps.capabilities.run_context import ToolsetContext
from apps.capabilities.tools import contributions
from apps.capabilities.tools._toolsets import declared_toolset

from ..assembly import Caller, agent_for, toolsets_for
from ..choices import StopReason
from ..events import (
    SubagentFinishedFrame,
    SubagentParkedFrame,
    SubagentStartedFrame,
    SubagentTextDeltaFrame,
    SubagentToolCallFrame,
    SubagentToolResultFrame,
)
from ..outcomes import INTERNAL_ERROR_SENTENCE, ProviderTimeout, outcome_of
from .scope import _resources_for
from .types import (
    _NAME,
    BACKGROUND_GATE_REFUSAL,
    CAPABILITY_ID,
    LIFECYCLE_TOOLS,
    Built,
    Delegate,
    DelegationRecord,
    DelegationRuntime,
    DelegationScopeAt,
    Level,
    LiveDelegation,
)

logger = logging.getLogger(__name__)


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
    toolsets, _ = toolsets_for(
        delegate.bindings,
        resources,
        caller=Caller(
            organization_id=runtime.organization_id,
            agent_id=delegate.agent_id,
            run_id=runtime.run_id,
            user_id=runtime.user_id,
            surface=runtime.surface,
        ),
        handle=delegate.handle,
        secret_of=lambda binding: delegate.secrets.get(binding.id),
    )
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
    if gate.has_work():
        runtime.gates.append((level.task_id, gate))
    # The runner's one assembly: guard first, the bindings' capabilities, the gate last.
    agent, _ = agent_for(
        handle=delegate.handle,
        meter=meter,
        gate=gate,
        toolsets=toolsets,
        instructions=[
            delegate.instructions,
            delegate.scope.instructions() if delegate.scope is not None else None,
            *contributions.run_instructions(delegate.bindings, resources),
        ],
        capabilities=contributions.run_capabilities(delegate.bindings, resources),
        model_settings=cast(
            ModelSettings | None,
            contributions.run_model_settings(delegate.bindings, delegate.handle.provider) or None,
        ),
        name=f"delegate-{delegate.name}",
    )
    return Built(agent=agent, meter=meter)


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
                                raise ProviderTimeout(
                                    delegate.handle.request_timeout_seconds
                                ) from exc
                            raise
                    elif Agent.is_call_tools_node(graph_node):
                        async with graph_node.stream(child.ctx) as stream:
                            async for event in stream:
                                self._frame_of(event, task_id)
                result = child.result.output if child.result is not None else ""
                messages = child.all_messages()
        except BaseException as exc:
            # One mapping for the run and its delegates (apps/runs/outcomes.py). A cap or a
            # cancel stops the whole run (the run's caps are the ones that bind) and is raised on;
            # anything else ends this delegation only, and the model reads why.
            end = outcome_of(exc, max_steps=delegate.max_steps, subject="delegate")
            if end.stop_reason == StopReason.INTERNAL_ERROR:
                logger.exception("delegation %s failed", task_id)
            elif end.stop_reason == StopReason.PROVIDER_ERROR:
                logger.warning("delegation %s: provider error: %s", task_id, exc)
            self._finish(
                delegate,
                task_id,
                description,
                started_at,
                built,
                end.status,
                end.stop_reason,
                end.error,
                "",
            )
            if end.ends_the_tree or not isinstance(exc, Exception):
                raise
            verb = "did not finish" if end.stop_reason == StopReason.STEP_LIMIT else "failed"
            return f"{delegate.name} {verb}: {end.error}"
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
        runtime.background_started = True
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
            }.get(
                handle.status,
                ("failed", "internal_error", INTERNAL_ERROR_SENTENCE.format(subject="delegate")),
            )
            if handle.status == TaskStatus.FAILED and handle.exception is not None:
                logger.warning("background delegation %s failed: %r", task_id, handle.exception)
                end = outcome_of(handle.exception, max_steps=delegate.max_steps, subject="delegate")
                status = (end.status, end.stop_reason, end.error)
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
