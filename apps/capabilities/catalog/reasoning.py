"""Reasoning: delegate, plan, think, and stay on task."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..conditions import NEVER_OFFERED, AnyOf, Predicate, When
from ..registry import VoiceMode, register, tool
from ..schema import CapabilityConfig, setting

_CACHE_TTL_LABELS = {"5m": "5 minutes", "1h": "1 hour"}

# --- subagents -------------------------------------------------------------------------------

_MODE_LABELS = {
    "sync": "Wait for the answer",
    "async": "Run in the background",
    "auto": "Decided per delegate before it starts",
}


class InlineSpecialist(BaseModel):
    """A specialist defined inside this agent: instructions and a model, reviewed with it."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(
        pattern=r"^[a-z0-9][a-z0-9_-]{0,63}$",
        description="How the model calls it with task; lower-case letters, digits, - and _.",
    )
    description: str = Field(min_length=1, max_length=1000, description="When to delegate to it.")
    instructions: str = Field(min_length=1, description="Its own instructions.")
    model_profile_id: str | None = Field(
        None, description="One of the organization's model profiles; empty uses this agent's."
    )
    mode: Literal["sync", "async", "auto"] | None = Field(
        None,
        description="Overrides the binding's mode for this specialist.",
        json_schema_extra={"x-enum-labels": {**_MODE_LABELS}},
    )


class SubagentsConfig(CapabilityConfig):
    """Delegation settings. Which published agents this one may delegate
    to is not here: it is the spec's top-level ``subagents`` (pinned delegates)."""

    inline: list[InlineSpecialist] = setting(
        default_factory=list, description="Specialists defined inside this agent."
    )
    mode: Literal["sync", "async", "auto"] = setting(
        "sync",
        description="The author's decision, not the model's: a delegation waits, runs in the background, or auto decides per delegate.",
        labels=_MODE_LABELS,
    )
    allow_questions: bool = setting(
        False, description="A sync delegate may ask the parent's person a question."
    )
    allow_dynamic: bool = setting(
        False,
        description=(
            "The model may write specialists for itself (instructions and one of the "
            "organization's model profiles, nothing else)."
        ),
    )
    max_depth: int = setting(
        1,
        ge=1,
        le=3,
        description="Delegation levels including this agent's: 1 is this agent delegating and its delegates not.",
    )
    max_fanout: int = setting(
        3,
        ge=1,
        le=10,
        description="Delegations running at once; past it the model is told to wait.",
    )
    max_result_chars: int = setting(
        2000,
        ge=200,
        le=20000,
        advanced=True,
        description="wait_tasks cuts a finished task's result here, with a marker pointing to check_task.",
    )
    share_with_delegates: list[str] = setting(
        default_factory=list,
        description="Ids of capabilities this agent binds that its delegates receive; never subagents.",
    )

    @field_validator("share_with_delegates")
    @classmethod
    def _not_subagents(cls, value: list[str]) -> list[str]:
        if "subagents" in value:
            # The one id "does the parent have it?" can never refuse.
            raise ValueError("subagents cannot be shared with delegates")
        if len(value) != len(set(value)):
            raise ValueError("a capability is listed twice")
        return value

    @field_validator("inline")
    @classmethod
    def _unique_names(cls, value: list[InlineSpecialist]) -> list[InlineSpecialist]:
        names = [s.name for s in value]
        if len(names) != len(set(names)):
            raise ValueError("two inline specialists share a name")
        return value


# Seed 000: the six task-lifecycle tools take or report a task id, and a sync delegation returns
# the answer and nothing else, so they are offered only when a background delegation is
# reachable: mode async or auto, a delegate preferring either, or permission to invent
# specialists. (A pinned delegate's own preference is spec-level; the runner adds that case.)
_BACKGROUND_REACHABLE = AnyOf(
    When("mode", "async", "auto"),
    When("allow_dynamic", True),
    Predicate(
        lambda c: any(s.mode in ("async", "auto") for s in c.inline),
        "an inline specialist prefers `async` or `auto`",
    ),
)


def _lifecycle(tool_id: str, does: str, args: dict[str, str], returns: str, *, acts: bool = False):
    return tool(
        tool_id,
        does=does,
        when=(
            "For delegations started in the background (task returned a task id). A sync "
            "delegation returns its answer directly and has no task id."
        ),
        args=args,
        returns=returns,
        side_effecting=acts,
        offered_when=_BACKGROUND_REACHABLE,
    )


register(
    id="subagents",
    name="Subagents",
    category="reasoning",
    does=(
        "Lets the agent hand self-contained pieces of work to specialists — published agents "
        "or specialists defined inside it — each with its own model, knowledge and step limit."
    ),
    examples=(
        "a researcher gathers sources while a writer drafts",
        "ask the finance agent to check a figure",
        "fan out three market analyses in parallel",
    ),
    needs="At least one delegate (a pinned agent or an inline specialist); without one it is left out.",
    never=(
        "Lends the parent's capabilities or credentials to a delegate beyond what "
        "share_with_delegates names; lets the model grant capabilities to a specialist it invents."
    ),
    tools=(
        tool(
            "task",
            does="Hand a self-contained piece of work to one of this agent's specialists.",
            when=(
                "Use it when a specialist listed in your instructions is better placed to do a "
                "part of the work. Describe the work fully: the delegate does not see this "
                "conversation. What the delegate does passes its own approval gates."
            ),
            args={
                "description": "The whole task and what to return. Required.",
                "subagent_type": "The specialist's name as your instructions list it. Required.",
            },
            returns=(
                "In sync mode, the delegate's answer. In the background, a task id to follow "
                "with check_task or wait_tasks. Past max_fanout (3 unless configured) a result "
                "telling you to wait or do the work yourself."
            ),
        ),
        _lifecycle(
            "check_task",
            "Check a background task's status and read its full result.",
            {"task_id": "The id task returned. Required."},
            "The task's status and, when finished, its complete result (never truncated).",
        ),
        _lifecycle(
            "wait_tasks",
            "Wait for background tasks to finish.",
            {
                "task_ids": "The tasks to wait for. Required.",
                "timeout": "Seconds to wait; default 300.",
                "mode": "`all` (default) waits for every task, `any` for the first.",
            },
            (
                "Each task's status and result. A result longer than max_result_chars (2,000 "
                "unless configured) is cut with an explicit marker — call check_task for the "
                "full text rather than delegating the work again."
            ),
        ),
        _lifecycle(
            "list_active_tasks",
            "List the background tasks still running.",
            {},
            "One line per running task: its id, delegate and how long it has run; a line saying none are running.",
        ),
        tool(
            "answer_subagent",
            does="Answer a question a background delegate is waiting on.",
            when=(
                "Declared so approvals and renames can reach it, and offered to no model: here "
                "no delegate waits on a question — a sync delegate's question goes to the "
                "person, and an async one cannot ask."
            ),
            args={
                "task_id": "The waiting task's id. Required.",
                "answer": "The answer. Required.",
            },
            returns="A line saying the delegation is not waiting for an answer.",
            offered_when=NEVER_OFFERED,
        ),
        _lifecycle(
            "send_message_to_subagent",
            "Send guidance to a running background task.",
            {
                "task_id": "The task's id. Required.",
                "message": "What the delegate should change or know. Required.",
            },
            "A line confirming the message was delivered, or that the task has already finished.",
            acts=True,
        ),
        _lifecycle(
            "soft_cancel_task",
            "Ask a background task to stop after its current step.",
            {"task_id": "The task's id. Required."},
            "A line confirming the request; work done so far is kept but not delivered.",
            acts=True,
        ),
        _lifecycle(
            "hard_cancel_task",
            "Stop a background task immediately.",
            {"task_id": "The task's id. Required."},
            "A line confirming it stopped; work it paid for and did not deliver is lost.",
            acts=True,
        ),
        tool(
            "create_agent",
            does="Write a specialist for yourself, to delegate to by name in this run.",
            when=(
                "Use it when no listed specialist fits and the work deserves its own focus. A "
                "specialist is instructions and a model, nothing else, and is not kept after "
                "this turn — create it again if task says the name is unknown."
            ),
            args={
                "name": "Its name. Required.",
                "description": "When to use it. Required.",
                "instructions": "Its instructions. Required.",
                "model": "One of the organization's model profiles — required; the refusal lists them.",
            },
            returns=(
                "A line confirming it can be called with task. A missing or unknown model, or "
                "more specialists than the run allows, is a refusal listing what is possible."
            ),
            offered_when=When("allow_dynamic", True),
        ),
        tool(
            "delegate",
            does="Write a one-off specialist and hand it a task in one call.",
            when="Use it instead of create_agent + task when the specialist is needed once.",
            args={
                "description": "The whole task and what to return. Required.",
                "instructions": "The specialist's instructions. Required.",
                "name": "Its name. Required.",
                "model": "One of the organization's model profiles — required.",
            },
            returns="The specialist's answer, or a task id when it runs in the background.",
            offered_when=When("allow_dynamic", True),
        ),
    ),
    scopes=("agents:delegate",),
    voice=VoiceMode.HAND_OFF,
    voice_note="handed off to the agent's text model",
    config_model=SubagentsConfig,
)

# --- planning --------------------------------------------------------------------------------


class PlanningConfig(CapabilityConfig):
    """Planning settings."""

    enable_subtasks: bool = setting(
        False,
        description="Adds the three subtask/dependency tools and the blocked status.",
    )
    cache_ttl: Literal["5m", "1h"] = setting(
        "5m",
        advanced=True,
        description="How long the prompt prefix before the plan reminder may be cached.",
        labels=_CACHE_TTL_LABELS,
    )


_PLAN_WHEN = (
    "The plan is your own checklist for multi-step work; it belongs to the conversation and is "
    "shown back to you every turn. Nothing here acts on the world."
)
_SUBTASKS = When("enable_subtasks", True)

register(
    id="planning",
    name="Planning",
    category="reasoning",
    does=(
        "Gives the agent a checklist it keeps for itself while it works — what is done, what is "
        "in progress, what is left — shown back to it every turn and kept with the conversation."
    ),
    examples=(
        "work through a ten-step migration without losing track",
        "pick up a half-finished plan in the next message",
    ),
    needs="Nothing. Costs no tokens of its own.",
    never="Acts on the world or decides who does a step (that is Subagents).",
    tools=(
        tool(
            "write_plan",
            does="Write or replace the whole checklist.",
            when=f"Use it at the start of multi-step work, or to restructure the plan. {_PLAN_WHEN}",
            args={"items": "The complete ordered list of steps, each {content, status}. Required."},
            returns=(
                "The plan as written, each step with its id and status. Duplicate ids, an empty "
                "step or a status not allowed here is a retry request naming it; nothing is written."
            ),
        ),
        tool(
            "read_plan",
            does="Read the steps and their ids.",
            when="Use it before a granular edit, to get the ids.",
            args={},
            returns="The steps with ids and statuses and a one-line summary; a line saying there is no plan yet.",
        ),
        tool(
            "add_task",
            does="Add one pending step.",
            when=_PLAN_WHEN,
            args={
                "content": "The step, in imperative form. Required.",
                "active_form": "Optional present-continuous label, e.g. “Fixing bug”.",
            },
            returns="The new step with its id.",
        ),
        tool(
            "update_task_status",
            does="Change one step's status.",
            when="Mark a step in_progress when you start it and completed when it is done.",
            args={
                "task_id": "The step's id. Required.",
                "status": "`pending`, `in_progress`, `completed`, `cancelled` (and `blocked` with subtasks). Required.",
            },
            returns="The updated step; an unknown id is a retry request.",
        ),
        tool(
            "update_task_statuses",
            does="Change several steps' statuses in one call.",
            when="Use it for a batch; if any entry is invalid nothing is applied.",
            args={"updates": "A list of {task_id, status}. Required."},
            returns="The updated steps, or a retry request naming the invalid entry.",
        ),
        tool(
            "remove_task",
            does="Remove a step.",
            when="Use it for a step that no longer makes sense; prefer cancelled to keep history.",
            args={"task_id": "The step's id. Required."},
            returns="A line confirming the removal; an unknown id is a retry request.",
        ),
        tool(
            "add_subtask",
            does="Add a subtask under an existing step.",
            when="Only with subtasks enabled. Use it to break a step down.",
            args={
                "parent_id": "The parent step's id. Required.",
                "content": "The subtask, in imperative form. Required.",
                "active_form": "Optional present-continuous label.",
            },
            returns="The new subtask with its id.",
            offered_when=_SUBTASKS,
        ),
        tool(
            "set_dependency",
            does="Make one step depend on another.",
            when="Only with subtasks enabled. A step whose prerequisite is unfinished becomes blocked.",
            args={
                "task_id": "The dependent step. Required.",
                "depends_on_id": "The prerequisite. Required.",
            },
            returns="A line confirming the dependency; a cycle or unknown id is a retry request.",
            offered_when=_SUBTASKS,
        ),
        tool(
            "get_available_tasks",
            does="List the steps that can be worked on now.",
            when="Only with subtasks enabled. Use it to pick the next step.",
            args={},
            returns="The steps with no incomplete dependency; a line saying none when none are.",
            offered_when=_SUBTASKS,
        ),
    ),
    voice=VoiceMode.LIVE,
    voice_note="as is",
    recommended=True,
    config_model=PlanningConfig,
    # Built: apps/capabilities/tools/.
)

# --- thinking --------------------------------------------------------------------------------


class ThinkingConfig(CapabilityConfig):
    """Thinking settings."""

    effort: Literal["minimal", "low", "medium", "high", "xhigh", "max"] | None = setting(
        None,
        description=(
            "Empty uses the provider's default. A level a provider lacks maps to its nearest, "
            "so a spec stays portable across models."
        ),
        labels={
            "minimal": "Minimal",
            "low": "Low",
            "medium": "Medium",
            "high": "High",
            "xhigh": "Extra high",
            "max": "Maximum",
        },
    )


register(
    id="thinking",
    name="Thinking",
    category="reasoning",
    does=(
        "Asks the model to reason before it answers: slower and more expensive, better at work "
        "that needs several steps held in mind at once."
    ),
    examples=(
        "untangle a scheduling problem with many constraints",
        "review a contract clause by clause",
    ),
    needs="A model that can reason.",
    never="Changes what the agent can reach — only how it works.",
    tools=(),
    voice=VoiceMode.LIVE,
    voice_note="mapped to the realtime model's own reasoning setting",
    config_model=ThinkingConfig,
    # Built: apps/capabilities/tools/.
)

# --- system_reminders ------------------------------------------------------------------------


class ReminderCadence(BaseModel):
    """When a reminder class fires; counted across the whole conversation."""

    model_config = ConfigDict(extra="forbid")

    interval: int = Field(5, ge=1, le=1000, description="Fire every N model requests.")
    first_after: int | None = Field(
        None,
        ge=1,
        le=1000,
        description="Request number of the first fire; empty is the first multiple of interval.",
    )
    max_fires: int | None = Field(
        None, ge=1, le=1000, description="Most fires across the conversation; empty is no limit."
    )


class FixedReminder(ReminderCadence):
    """A fixed line you write."""

    content: str = Field(min_length=1, max_length=2000, description="The reminder line.")


class LLMReminderSettings(ReminderCadence):
    """A short nudge a model writes from the recent transcript: one model call per fire."""

    max_context_messages: int = Field(
        10, ge=1, le=50, description="Recent messages the reminder model reads."
    )


class SystemRemindersConfig(CapabilityConfig):
    """Instruction reminder settings. At least one class
    is needed or the capability contributes nothing and is dropped from the run."""

    reminders: list[FixedReminder] = setting(
        default_factory=list,
        max_length=20,
        description="Fixed lines you write, each with its cadence. Costs nothing.",
    )
    goal_reanchor: ReminderCadence | None = setting(
        None,
        description="Points the model back at the person's first request in the run. Costs nothing.",
    )
    llm_reminder: LLMReminderSettings | None = setting(
        None,
        description="A nudge a model writes from the recent transcript; one model call per fire, on the run's model and ledger.",
    )
    cache_ttl: Literal["5m", "1h"] = setting(
        "5m",
        advanced=True,
        description="Life of the cache breakpoint before the reminder.",
        labels=_CACHE_TTL_LABELS,
    )


register(
    id="system_reminders",
    name="Instruction reminders",
    category="reasoning",
    does=(
        "Repeats guidance in the middle of a long run so the agent stops drifting from its "
        "instructions after many tool calls."
    ),
    examples=(
        "every ten requests, remind it to answer in the customer's language",
        "re-anchor a long research run on the original question",
    ),
    needs="At least one reminder class configured.",
    never="Writes a reminder into the stored conversation: it is added per request only.",
    tools=(),
    voice=VoiceMode.NEVER,
    voice_note="no effect: acts on a text run's model requests, which a call does not send",
    advanced=True,
    config_model=SystemRemindersConfig,
)
