"""planning: a checklist the model keeps for itself, and the rules that make it the conversation's.

Nine tools edit one list of steps (``write_plan`` … ``get_available_tasks``; the last three and the
``blocked`` status only under ``enable_subtasks``). None acts on the world, so none is side
effecting and nothing here needs a person's approval.

The plan belongs to the conversation, not to a turn (seed 000, "Planificación"). The store is the
runner's, not the capability's: a :class:`RunPlan` seeded before the run (:func:`seed_plan`) from
the conversation's stored plan, or from the parked state on a resume, handed to the builder in
``resources.plan``, and written back when the run stops (:func:`write_back`):

- a finished plan (every step completed or cancelled) is kept but not seeded into the next turn —
  the reminder would call "your current plan" a task nobody is doing (agenticos#1221);
- a turn whose store opened empty over a finished plan writes nothing, or an empty dump would erase
  the kept row at the next ordinary message;
- a ``blocked`` step is pending work, so a plan holding one is seeded;
- a run that failed, was stopped or ran out of budget puts its ``in_progress`` step back to
  ``pending`` — kept as is, the next turn's reminder told a new run it was already doing it
  (agenticos#2149); a turn that ends on a question, or parks, keeps it;
- an empty checklist against an empty (null) column is no change to write.

Each turn the plan comes back to the model as a cache-safe trailing reminder
(:class:`PlanReminder`): appended after a cache breakpoint at the tail of the request, never in the
system prompt and never in the stored history, so the stable prefix stays byte-identical.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from pydantic_ai import RunContext
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.messages import CachePoint, ModelRequest, ToolReturnPart, UserPromptPart
from pydantic_ai_harness.planning import PlanItem, PlanStatusUpdate, TaskStatus, render_plan

from ._toolsets import declared_toolset, parsed_config
from .failures import WrongArguments, budgeted

CAPABILITY_ID = "planning"
TOOL_IDS = (
    "write_plan",
    "read_plan",
    "add_task",
    "update_task_status",
    "update_task_statuses",
    "remove_task",
    "add_subtask",
    "set_dependency",
    "get_available_tasks",
)
REMINDER_OPEN = "<plan-reminder>"
REMINDER_CLOSE = "</plan-reminder>"
TERMINAL = frozenset({TaskStatus.completed, TaskStatus.cancelled})
# Run statuses after which nobody is working on the plan any more (MAP.md names them).
STOPPED_RUN_STATUSES = frozenset({"failed", "cancelled", "budget_exceeded", "guardrail_blocked"})
MAX_STEPS = 100

GUIDANCE = (
    "You have planning tools. For multi-step work, call write_plan first to lay out the steps, then "
    "keep it current: mark exactly one step in_progress when you start it and completed as soon as it "
    "is done. Your current plan is shown to you at the end of each request."
)


# --- the run's store ------------------------------------------------------------------------------


@dataclass
class RunPlan:
    """The plan store of one run. The runner creates it with :func:`seed_plan`, puts it in
    ``resources.plan``, and reads it back with :func:`write_back` after the run."""

    items: list[PlanItem] = field(default_factory=list)
    # The conversation's stored plan was finished, so the turn opened empty over it.
    opened_over_finished: bool = False
    # The conversation had a non-empty stored plan (or a parked one) when the run began.
    had_stored: bool = False


@dataclass(frozen=True)
class PlanWrite:
    """What the runner writes back to the conversation: nothing (``write`` false), or ``value``
    — the plan as JSON, or None to clear the column."""

    write: bool
    value: list[dict[str, Any]] | None = None


def parse_items(raw: Iterable[Any] | None) -> list[PlanItem]:
    return [
        item if isinstance(item, PlanItem) else PlanItem.model_validate(item)
        for item in (raw or [])
    ]


def plan_json(items: Sequence[PlanItem]) -> list[dict[str, Any]]:
    """The JSON the conversation (and a parked run's state) stores."""
    return [item.model_dump(mode="json") for item in items]


def is_finished(items: Sequence[PlanItem]) -> bool:
    """Every step completed or cancelled (a blocked step is pending work, so not finished)."""
    return bool(items) and all(item.status in TERMINAL for item in items)


def seed_plan(*, stored: Iterable[Any] | None, parked: Iterable[Any] | None = None) -> RunPlan:
    """The store a run opens with: the parked state's plan on a resume (the latest copy, left
    intact: it is mid-plan by construction), else the conversation's stored plan unless finished."""
    if parked is not None:
        items = parse_items(parked)
        return RunPlan(items=items, had_stored=bool(items))
    items = parse_items(stored)
    if is_finished(items):
        return RunPlan(items=[], opened_over_finished=True, had_stored=True)
    return RunPlan(items=items, had_stored=bool(items))


def write_back(plan: RunPlan, *, run_status: str) -> PlanWrite:
    """What to write to the conversation when the run stops with ``run_status``."""
    items = [item.model_copy() for item in plan.items]
    if run_status in STOPPED_RUN_STATUSES:
        items = [
            replace_status(item, TaskStatus.pending)
            if item.status is TaskStatus.in_progress
            else item
            for item in items
        ]
    if not items:
        if plan.opened_over_finished or not plan.had_stored:
            return PlanWrite(write=False)
        return PlanWrite(write=True, value=None)
    return PlanWrite(write=True, value=plan_json(items))


def replace_status(item: PlanItem, status: TaskStatus) -> PlanItem:
    return item.model_copy(update={"status": status})


class HoldsPlan(Protocol):
    """What planning reads of the run's resources (``run_context.RunResources``)."""

    plan: RunPlan | None


def plan_store(resources: HoldsPlan) -> RunPlan:
    """The run's store; a surface with no conversation keeps a plan for the run alone."""
    if resources.plan is None:
        resources.plan = RunPlan()
    return resources.plan


# --- rendering ------------------------------------------------------------------------------------

_ICONS = {
    TaskStatus.pending: "[ ]",
    TaskStatus.in_progress: "[~]",
    TaskStatus.completed: "[x]",
    TaskStatus.cancelled: "[-]",
    TaskStatus.blocked: "[!]",
}


def render_with_ids(items: Sequence[PlanItem], *, subtasks: bool) -> str:
    lines = []
    for index, item in enumerate(items, 1):
        line = f"{index}. {_ICONS[item.status]} [{item.id}] {item.content} ({item.status.value})"
        if subtasks and item.parent_id:
            line += f" — subtask of {item.parent_id}"
        if subtasks and item.depends_on:
            line += f" — depends on {', '.join(item.depends_on)}"
        lines.append(line)
    return "\n".join(lines)


def summary_line(items: Sequence[PlanItem]) -> str:
    counts = {status: 0 for status in TaskStatus}
    for item in items:
        counts[item.status] += 1
    parts = [
        f"{counts[TaskStatus.completed]} completed",
        f"{counts[TaskStatus.in_progress]} in progress",
    ]
    parts.append(f"{counts[TaskStatus.pending]} pending")
    if counts[TaskStatus.blocked]:
        parts.append(f"{counts[TaskStatus.blocked]} blocked")
    if counts[TaskStatus.cancelled]:
        parts.append(f"{counts[TaskStatus.cancelled]} cancelled")
    text = "Summary: " + ", ".join(parts) + "."
    if is_finished(items):
        text += " Every step is done: answer the person with a summary."
    return text


def reminder_body(items: Sequence[PlanItem]) -> str:
    """The trailing reminder's text for a non-empty plan (after its opening tag)."""
    return (
        f"Your current plan (keep it updated with the planning tools):\n\n"
        f"{render_plan(list(items))}\n{REMINDER_CLOSE}"
    )


def is_plan_reminder(part: Any) -> bool:
    """True for the ephemeral reminder part (a model that reads prompts — the offline one — skips it)."""
    if not isinstance(part, UserPromptPart) or isinstance(part.content, str):
        return False
    texts = [c for c in part.content if isinstance(c, str)]
    return bool(texts) and texts[0].startswith(REMINDER_OPEN)


# --- the trailing reminder ------------------------------------------------------------------------


@dataclass
class PlanReminder(AbstractCapability[Any]):
    """Appends the run's plan to the tail of every model request, behind a cache breakpoint.

    The breakpoint marks the end of what the next request starts with, so only the small mutable
    plan falls outside the cached prefix; the reminder never enters message history.
    """

    plan: RunPlan = field(default_factory=RunPlan)
    cache_ttl: str = "5m"

    async def wrap_model_request(self, ctx, *, request_context, handler):
        if not self.plan.items:
            return await handler(request_context)
        messages = request_context.messages
        last = messages[-1] if messages else None
        if isinstance(last, ModelRequest):
            content: list[Any] = [REMINDER_OPEN + "\n", reminder_body(self.plan.items)]
            if _has_cache_target(last.parts):
                content.insert(0, CachePoint(ttl=self.cache_ttl))
            messages[-1] = replace(last, parts=[*last.parts, UserPromptPart(content=content)])
        return await handler(request_context)


def _has_cache_target(parts: Sequence[Any]) -> bool:
    # A breakpoint attaches to the content before it; with none (an instructions-only first
    # request) providers reject it.
    for part in parts:
        if isinstance(part, ToolReturnPart):
            return True
        if isinstance(part, UserPromptPart):
            if isinstance(part.content, str):
                if part.content:
                    return True
            elif any(not isinstance(c, CachePoint) and c for c in part.content):
                return True
        if type(part).__name__ in {"RetryPromptPart", "RetryFeedbackPart"}:
            return True
    return False


# --- the nine tools -------------------------------------------------------------------------------


def _find(items: Sequence[PlanItem], task_id: str) -> PlanItem | None:
    return next((item for item in items if item.id == task_id), None)


def _unknown_id(task_id: str, items: Sequence[PlanItem], what: str = "step") -> WrongArguments:
    if not items:
        return WrongArguments(
            f"There is no {what} {task_id!r}: the plan is empty. Write one with write_plan first."
        )
    known = ", ".join(f"{item.id} ({item.content[:40]})" for item in items[:20])
    return WrongArguments(
        f"There is no {what} with id {task_id!r}. The plan's ids: {known}. Call read_plan to see them all."
    )


def _blocks(items: Sequence[PlanItem], item: PlanItem) -> list[PlanItem]:
    by_id = {node.id: node for node in items}
    return [by_id[d] for d in item.depends_on if d in by_id and by_id[d].status not in TERMINAL]


def _sync_blocks(items: list[PlanItem]) -> None:
    """A step with an unfinished prerequisite is blocked; a blocked step whose prerequisites are all
    done goes back to pending."""
    for index, item in enumerate(items):
        if not item.depends_on:
            continue
        blocked = bool(_blocks(items, item))
        if blocked and item.status in (TaskStatus.pending, TaskStatus.in_progress):
            items[index] = replace_status(item, TaskStatus.blocked)
        elif not blocked and item.status is TaskStatus.blocked:
            items[index] = replace_status(item, TaskStatus.pending)


def _depends_cycle(items: Sequence[PlanItem]) -> bool:
    by_id = {item.id: item for item in items}
    state: dict[str, int] = {}

    def visit(node_id: str) -> bool:
        state[node_id] = 1
        for dep in by_id[node_id].depends_on:
            if dep not in by_id:
                continue
            if state.get(dep) == 1 or (state.get(dep, 0) == 0 and visit(dep)):
                return True
        state[node_id] = 2
        return False

    return any(state.get(item.id, 0) == 0 and visit(item.id) for item in items)


class PlanTools:
    """The nine tools over one :class:`RunPlan`.

    Async on purpose, with no await inside: each edit runs whole on the event loop, so parallel
    calls in one model response apply in the order the model made them, with no thread sharing the
    list.
    """

    def __init__(self, plan: RunPlan, *, subtasks: bool) -> None:
        self.plan = plan
        self.subtasks = subtasks

    def _check_status(self, status: TaskStatus) -> None:
        if status is TaskStatus.blocked and not self.subtasks:
            raise WrongArguments(
                "The blocked status needs subtasks, which are off for this agent. "
                "Use pending, in_progress, completed or cancelled."
            )

    def _listing(self) -> str:
        return render_with_ids(self.plan.items, subtasks=self.subtasks)

    def functions(self) -> dict[str, Any]:
        plan, tools = self.plan, self

        @budgeted
        async def write_plan(ctx: RunContext[Any], items: list[PlanItem] | None = None) -> str:
            new_items = [item.model_copy() for item in (items or [])]
            if len(new_items) > MAX_STEPS:
                raise WrongArguments(
                    f"The plan has {len(new_items)} steps; keep it to at most {MAX_STEPS}."
                )
            ids = [item.id for item in new_items]
            duplicates = sorted({i for i in ids if ids.count(i) > 1})
            if duplicates:
                raise WrongArguments(
                    f"Step ids must be unique; repeated: {', '.join(duplicates)}. Omit ids to get new ones."
                )
            for item in new_items:
                if not item.content.strip():
                    raise WrongArguments(
                        'Every step needs content, e.g. {"content": "Draft the email", "status": "pending"}.'
                    )
                tools._check_status(item.status)
                if not tools.subtasks and (item.parent_id or item.depends_on):
                    raise WrongArguments(
                        "parent_id and depends_on need subtasks, which are off for this agent; leave them out."
                    )
                for ref in [item.parent_id, *item.depends_on]:
                    if ref is not None and ref not in ids:
                        raise WrongArguments(
                            f"Step {item.id!r} refers to {ref!r}, which is not in the plan you passed."
                        )
            if tools.subtasks and _depends_cycle(new_items):
                raise WrongArguments(
                    "The plan's dependencies form a cycle; remove one depends_on entry."
                )
            if tools.subtasks:
                _sync_blocks(new_items)
            plan.items = new_items
            if not new_items:
                return "Plan cleared: it has no steps now."
            return f"Plan written: {len(new_items)} step(s).\n\n{tools._listing()}"

        @budgeted
        async def read_plan(ctx: RunContext[Any]) -> str:
            if not plan.items:
                return "There is no plan yet. Write one with write_plan when the work has several steps."
            return f"Current plan:\n{tools._listing()}\n\n{summary_line(plan.items)}"

        @budgeted
        async def add_task(ctx: RunContext[Any], content: str = "", active_form: str = "") -> str:
            if not content.strip():
                raise WrongArguments(
                    'content is empty; pass the step in imperative form, e.g. content="Draft the email".'
                )
            if len(plan.items) >= MAX_STEPS:
                raise WrongArguments(
                    f"The plan already has {MAX_STEPS} steps; remove or cancel some first."
                )
            item = PlanItem(content=content.strip(), active_form=active_form.strip())
            plan.items.append(item)
            return f"Added step [{item.id}] {item.content} (pending)."

        def _set_status(task_id: str, status: TaskStatus) -> PlanItem:
            tools._check_status(status)
            item = _find(plan.items, task_id)
            if item is None:
                raise _unknown_id(task_id, plan.items)
            if status is TaskStatus.in_progress and tools.subtasks:
                waiting = _blocks(plan.items, item)
                if waiting:
                    names = ", ".join(f"{w.id} ({w.content[:40]})" for w in waiting)
                    raise WrongArguments(
                        f"Step {task_id!r} cannot start: it waits for {names}. Finish those first."
                    )
            updated = replace_status(item, status)
            plan.items[plan.items.index(item)] = updated
            return updated

        @budgeted
        async def update_task_status(ctx: RunContext[Any], task_id: str, status: TaskStatus) -> str:
            updated = _set_status(task_id, status)
            if tools.subtasks:
                _sync_blocks(plan.items)
            return f"Step [{updated.id}] {updated.content} is now {updated.status.value}."

        @budgeted
        async def update_task_statuses(
            ctx: RunContext[Any], updates: list[PlanStatusUpdate] | None = None
        ) -> str:
            if not updates:
                raise WrongArguments(
                    'updates is empty; pass a list like [{"task_id": "…", "status": "completed"}].'
                )
            for (
                entry
            ) in updates:  # validate the whole batch first: nothing is applied if any is wrong
                tools._check_status(entry.status)
                if _find(plan.items, entry.task_id) is None:
                    raise _unknown_id(entry.task_id, plan.items)
            before = [item.model_copy() for item in plan.items]
            try:
                lines = [
                    f"[{u.id}] {u.content} → {u.status.value}"
                    for u in (_set_status(e.task_id, e.status) for e in updates)
                ]
            except WrongArguments:
                plan.items[:] = before
                raise
            if tools.subtasks:
                _sync_blocks(plan.items)
            return f"Updated {len(lines)} step(s):\n" + "\n".join(lines)

        @budgeted
        async def remove_task(ctx: RunContext[Any], task_id: str) -> str:
            item = _find(plan.items, task_id)
            if item is None:
                raise _unknown_id(task_id, plan.items)
            removed = {task_id}
            # A removed step's subtasks go with it; dependencies on it are dropped.
            changed = True
            while changed:
                changed = False
                for other in plan.items:
                    if other.parent_id in removed and other.id not in removed:
                        removed.add(other.id)
                        changed = True
            plan.items[:] = [
                other.model_copy(
                    update={"depends_on": [d for d in other.depends_on if d not in removed]}
                )
                for other in plan.items
                if other.id not in removed
            ]
            if tools.subtasks:
                _sync_blocks(plan.items)
            extra = f" and {len(removed) - 1} subtask(s)" if len(removed) > 1 else ""
            return f"Removed step [{task_id}] {item.content}{extra}."

        @budgeted
        async def add_subtask(
            ctx: RunContext[Any], parent_id: str, content: str = "", active_form: str = ""
        ) -> str:
            parent = _find(plan.items, parent_id)
            if parent is None:
                raise _unknown_id(parent_id, plan.items, "parent step")
            if not content.strip():
                raise WrongArguments("content is empty; pass the subtask in imperative form.")
            item = PlanItem(
                content=content.strip(), active_form=active_form.strip(), parent_id=parent_id
            )
            position = max(
                i
                for i, other in enumerate(plan.items)
                if other.id == parent_id or other.parent_id == parent_id
            )
            plan.items.insert(position + 1, item)
            return f"Added subtask [{item.id}] {item.content} under [{parent_id}] {parent.content}."

        @budgeted
        async def set_dependency(ctx: RunContext[Any], task_id: str, depends_on_id: str) -> str:
            item = _find(plan.items, task_id)
            if item is None:
                raise _unknown_id(task_id, plan.items)
            prerequisite = _find(plan.items, depends_on_id)
            if prerequisite is None:
                raise _unknown_id(depends_on_id, plan.items, "prerequisite step")
            if task_id == depends_on_id:
                raise WrongArguments("A step cannot depend on itself.")
            if depends_on_id in item.depends_on:
                return f"[{task_id}] already depends on [{depends_on_id}]."
            candidate = [
                other.model_copy(update={"depends_on": [*other.depends_on, depends_on_id]})
                if other.id == task_id
                else other
                for other in plan.items
            ]
            if _depends_cycle(candidate):
                raise WrongArguments(
                    f"[{depends_on_id}] already depends on [{task_id}]: that would be a cycle."
                )
            plan.items[:] = candidate
            _sync_blocks(plan.items)
            now = _find(plan.items, task_id)
            assert now is not None  # found above, and a dependency never removes a task
            return f"[{task_id}] {item.content} now depends on [{depends_on_id}] {prerequisite.content} (status {now.status.value})."

        @budgeted
        async def get_available_tasks(ctx: RunContext[Any]) -> str:
            ready = [
                item
                for item in plan.items
                if item.status in (TaskStatus.pending, TaskStatus.in_progress)
                and not _blocks(plan.items, item)
            ]
            if not ready:
                return "No step can be worked on now." if plan.items else "There is no plan yet."
            return "Steps that can be worked on now:\n" + render_with_ids(ready, subtasks=True)

        return {
            "write_plan": write_plan,
            "read_plan": read_plan,
            "add_task": add_task,
            "update_task_status": update_task_status,
            "update_task_statuses": update_task_statuses,
            "remove_task": remove_task,
            "add_subtask": add_subtask,
            "set_dependency": set_dependency,
            "get_available_tasks": get_available_tasks,
        }


def build_planning_toolset(binding, context):
    config = parsed_config(CAPABILITY_ID, binding)
    plan = plan_store(context.resources)
    functions = PlanTools(plan, subtasks=config.enable_subtasks).functions()
    return declared_toolset(
        CAPABILITY_ID, binding, functions, toolset_id="planning", harmless=frozenset({"read_plan"})
    )


def planning_capabilities(binding, resources: HoldsPlan) -> list[AbstractCapability[Any]]:
    """The trailing reminder over the run's store (the same object the tools edit)."""
    config = parsed_config(CAPABILITY_ID, binding)
    return [PlanReminder(plan=plan_store(resources), cache_ttl=config.cache_ttl)]


def planning_instructions(binding, resources: HoldsPlan) -> str:
    """Static, cache-stable guidance; the plan itself never lands in the system prompt."""
    text = GUIDANCE
    if parsed_config(CAPABILITY_ID, binding).enable_subtasks:
        text += (
            " Break a large step down with add_subtask and record order with set_dependency: a step stays "
            "blocked until what it depends on is completed or cancelled; get_available_tasks lists what can start."
        )
    return text


__all__ = [
    "PlanReminder",
    "PlanWrite",
    "RunPlan",
    "build_planning_toolset",
    "is_finished",
    "is_plan_reminder",
    "plan_json",
    "seed_plan",
    "write_back",
]
