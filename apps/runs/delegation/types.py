"""What delegation resolves before a run and what every delegation of one run shares: the
delegates, their scope, the run-wide runtime, and the records booked as rows."""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import re
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from pydantic_ai import Agent

from apps.spend.guard import RunMeter

from ..events import Frame
from ..modelbuilder import ModelHandle

logger = logging.getLogger(__name__)

CAPABILITY_ID = "subagents"
_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")

BACKGROUND_GATE_REFUSAL = (
    "{tool} needs a person's approval, and a delegation running in the background cannot stop "
    'to ask one. Delegate this work with mode="sync" instead, so the person can decide it.'
)
LIFECYCLE_TOOLS = (
    "check_task",
    "wait_tasks",
    "list_active_tasks",
    "answer_subagent",
    "send_message_to_subagent",
    "soft_cancel_task",
    "hard_cancel_task",
)


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
    # Whether this segment started any background delegation: its answer then leaves the run
    # accruing until the last of them settled (lifetime.outlive).
    background_started: bool = False
    # The rows opened for delegations still running when the answer was booked: {row id: task id}.
    accruing_rows: dict[int, str] = field(default_factory=dict)
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


@dataclass
class DelegationScopeAt:
    """A scope as one agent instance of the tree sees it: its delegates and its own level."""

    scope: DelegationScope
    level: Level


# --- the tools ----------------------------------------------------------------------------------
