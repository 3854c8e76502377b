"""system_reminders ("Instruction reminders"): guidance repeated in the middle of a long run, so
a session stops drifting from its instructions after many tool calls. No tools.

Three classes, each with its own cadence (``interval``: every N model requests; ``first_after``:
the request number of the first fire; ``max_fires``: the cap across the conversation):

- ``reminders[]`` — fixed lines the author wrote; cost nothing;
- ``goal_reanchor`` — points the model back at the person's first request (pydantic-ai-harness's
  ``GoalReanchor`` line); costs nothing;
- ``llm_reminder`` — a short nudge a model writes from the recent transcript (the harness's
  ``LLMReminder``) on the run's own model, under the run's usage limits minus one reserved
  request, falling back to the goal line on any error; its usage is booked to the run's ledger
  (:mod:`.ambient`), because the agent that writes it is not wrapped by the budget guard.

The cadence counts across the whole conversation and is durable: the request counter and each
class's fires are kept on the conversation (:class:`ReminderCounters`, seeded before the run and
written back after it), so a reminder set to fire every ten requests continues where the last
turn left it, and reloading the conversation resumes it. Only the counters are kept: the text is
injected per request, appended to the tail of the request behind a cache breakpoint, and never
enters the stored history — the cached prefix (tools, system, the real conversation) stays
byte-identical turn after turn. (The harness's own ``SystemReminders`` enqueues its reminder into
the run's history, which is why this module injects it itself.)

A configuration with no class attaches nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, cast

from pydantic_ai import RunContext
from pydantic_ai.capabilities import AbstractCapability, CapabilityOrdering
from pydantic_ai.messages import CachePoint, ModelRequest, UserPromptPart
from pydantic_ai.models import Model
from pydantic_ai_harness.system_reminders import GoalReanchor, LLMReminder

from ..run_context import RunResources
from ._toolsets import parsed_config
from .ambient import measured
from .compaction import RunCompaction
from .planning import _has_cache_target

CAPABILITY_ID = "system_reminders"
REMINDER_OPEN = "<system-reminder>"
REMINDER_CLOSE = "</system-reminder>"
LEDGER_KIND = "compaction"


@dataclass
class ReminderCounters:
    """The conversation's reminder cadence: model requests so far and fires per class."""

    requests: int = 0
    fires: dict[str, int] = field(default_factory=dict)

    @classmethod
    def seed(cls, stored: dict | None) -> ReminderCounters:
        stored = stored or {}
        fires = stored.get("fires") or {}
        return cls(
            requests=int(stored.get("requests") or 0),
            fires={str(k): int(v) for k, v in fires.items()},
        )

    def as_json(self) -> dict:
        return {"requests": self.requests, "fires": dict(self.fires)}


def is_system_reminder(part: Any) -> bool:
    """True for the ephemeral reminder part (a model that reads prompts — the offline one — skips it)."""
    if not isinstance(part, UserPromptPart) or isinstance(part.content, str):
        return False
    texts = [c for c in part.content if isinstance(c, str)]
    return bool(texts) and texts[0].startswith(REMINDER_OPEN)


def fires_on(cadence, request_number: int, fired: int) -> bool:
    """Whether a class with ``cadence`` fires on conversation request ``request_number``."""
    if cadence.max_fires is not None and fired >= cadence.max_fires:
        return False
    base = cadence.first_after if cadence.first_after is not None else cadence.interval
    return request_number >= base and (request_number - base) % cadence.interval == 0


def counters_store(resources: RunResources) -> ReminderCounters:
    if resources.reminder_counters is None:
        resources.reminder_counters = ReminderCounters()
    return resources.reminder_counters


@dataclass
class RunReminders(AbstractCapability[Any]):
    """The reminders of one binding over the conversation's counters."""

    config: Any
    counters: ReminderCounters = field(default_factory=ReminderCounters)

    async def _due(self, ctx: RunContext[Any], number: int) -> list[str]:
        texts: list[str] = []
        fires = self.counters.fires
        for index, reminder in enumerate(self.config.reminders):
            key = f"reminder:{index}"
            if fires_on(reminder, number, fires.get(key, 0)):
                fires[key] = fires.get(key, 0) + 1
                texts.append(reminder.content)
        goal = self.config.goal_reanchor
        if goal is not None and fires_on(goal, number, fires.get("goal_reanchor", 0)):
            fires["goal_reanchor"] = fires.get("goal_reanchor", 0) + 1
            texts.append(GoalReanchor()(ctx) or "Stay on task.")
        llm = self.config.llm_reminder
        if llm is not None and fires_on(llm, number, fires.get("llm_reminder", 0)):
            fires["llm_reminder"] = fires.get("llm_reminder", 0) + 1
            # LLMReminder is typed for a Model; the run's model is one (AbstractModel is its base).
            writer = LLMReminder(
                model=cast(Model, ctx.model), max_context_messages=llm.max_context_messages
            )
            async with measured(ctx.usage, kind=LEDGER_KIND):
                # Any error, or a step limit with no request to spare, falls back to the goal line.
                written = await writer(ctx)
            if written is not None:
                texts.append(str(written))
        return texts

    def get_ordering(self) -> CapabilityOrdering:
        # Inside compaction: a request compaction rewrote still ends with this request's reminder.
        return CapabilityOrdering(wrapped_by=[RunCompaction])

    async def before_model_request(self, ctx: RunContext[Any], request_context):
        messages = request_context.messages
        last = messages[-1] if messages else None
        if isinstance(last, ModelRequest):
            self.counters.requests += 1
            texts = await self._due(ctx, self.counters.requests)
            if texts:
                content: list[Any] = [
                    REMINDER_OPEN + "\n",
                    "\n\n".join(texts),
                    "\n" + REMINDER_CLOSE,
                ]
                if _has_cache_target(last.parts):
                    # Behind the breakpoint: the cached prefix stays byte-identical.
                    content.insert(0, CachePoint(ttl=self.config.cache_ttl))
                tail = replace(last, parts=[*last.parts, UserPromptPart(content=content)])
                # A new list, for this request only: the stored history never holds a reminder.
                request_context.messages = [*messages[:-1], tail]
        return request_context


def has_a_class(config) -> bool:
    return bool(config.reminders or config.goal_reanchor or config.llm_reminder)


def system_reminders_capabilities(binding, resources: RunResources) -> list[Any]:
    config = parsed_config(CAPABILITY_ID, binding)
    if not has_a_class(config):
        return []  # an empty configuration contributes nothing
    return [RunReminders(config=config, counters=counters_store(resources))]


def build_system_reminders_toolset(binding, context):
    return None  # no tools, on purpose


__all__ = [
    "ReminderCounters",
    "RunReminders",
    "build_system_reminders_toolset",
    "fires_on",
    "is_system_reminder",
    "system_reminders_capabilities",
]
