"""compaction ("Long conversations"): a long run's message history trimmed before each request,
so a run that would have hit the model's window keeps working. The strategies are
pydantic-ai-harness's:

=====================  ========================================================================
``strategy``           harness capability
=====================  ========================================================================
``summarize`` (default) ``SummarizingCompaction`` — the one that keeps what old turns said
``tiered``             ``TieredCompaction`` over ``ClearToolResults`` then a summary: pays for a
                       summary only when clearing old tool results was not enough
``clear_tool_results``  ``ClearToolResults`` — old results replaced by a placeholder
``sliding_window``     ``SlidingWindowCompaction`` — the oldest messages dropped
=====================  ========================================================================

The trigger is a fraction (``max_fraction``, 0.9) of the window of the model the request goes to:
``context_window`` when the binding sets one, else the model profile's (noted from the provider's
listing, or the bundled price registry), else ``fallback_context_window``. The harness measures a
request against the latest response that carries the provider's own ``input_tokens`` — which
counted the instructions and every tool schema — and estimates only what came after it.

A setting that cannot work says so instead of running. When the instructions and tool schemas
alone (the overhead: the provider's input tokens of the latest response minus the estimate of the
messages it was sent) are above the trigger, no summary can get under it and every request would
buy one that changes nothing; the strategies that buy something (``summarize``, ``tiered``) are
skipped and the chat is told the overhead and the window it was measured against, once per run.
The first request of a conversation has nothing to measure and compacts as configured; the
strategies that call no model run whatever the window.

A summary is announced while it runs (a ``compaction`` frame, through
``RunResources.on_compaction``) and is booked: the harness writes it with an agent of its own,
outside the budget guard, so the run's usage is measured across the hook and the difference booked
to the run's ledger (:mod:`.ambient`) — recorded, not refused; the next request is refused if a
cap was crossed.

The compacted history is what the run's transcript keeps, and the next turn of the conversation
starts from that transcript, so it starts from the summary (with how far it reaches: the messages
after it are the ones said since) instead of buying another summary of the same messages. Only one
summary is kept: a new one is written as an update of the previous and replaces it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from pydantic_ai import RunContext
from pydantic_ai.capabilities import WrapperCapability
from pydantic_ai.messages import ModelRequest, ModelResponse
from pydantic_ai_harness.compaction import (
    ClearToolResults,
    SlidingWindowCompaction,
    SummarizingCompaction,
    TieredCompaction,
    estimate_context_tokens,
    estimate_token_count,
    resolve_context_window,
)

from ..run_context import RunResources
from ._toolsets import parsed_config
from .ambient import measured

CAPABILITY_ID = "compaction"
# The strategies that buy a summary; the others edit a list and return.
SUMMARIZING = frozenset({"summarize", "tiered"})
LEDGER_KIND = "compaction"


def message_tokens(messages) -> int:
    """The estimate of the messages' own parts, without the instructions a request carries."""
    return estimate_token_count(
        [
            dataclasses.replace(m, instructions=None) if isinstance(m, ModelRequest) else m
            for m in messages
        ]
    )


def overhead_tokens(messages) -> int | None:
    """What the latest provider-measured request carried besides its messages (instructions, tool
    schemas), or None before any response reported its input tokens."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if isinstance(message, ModelResponse) and message.usage.input_tokens:
            return max(0, message.usage.input_tokens - message_tokens(messages[:index]))
    return None


def _strategy(config, window: int | None):
    trigger = {
        "max_fraction": config.max_fraction,
        "context_window": window,
        "fallback_context_window": config.fallback_context_window,
    }
    summarize_kwargs = {"keep_messages": config.keep_messages}
    if config.summary_prompt:
        summarize_kwargs["summary_prompt"] = config.summary_prompt
    if config.strategy == "summarize":
        return SummarizingCompaction(**summarize_kwargs, **trigger)
    if config.strategy == "clear_tool_results":
        return ClearToolResults(keep_pairs=config.keep_tool_pairs, **trigger)
    if config.strategy == "sliding_window":
        return SlidingWindowCompaction(keep_messages=config.keep_messages, **trigger)
    # tiered: the tiers' own triggers are bypassed; the tiered target decides.
    return TieredCompaction(
        tiers=[
            ClearToolResults(keep_pairs=config.keep_tool_pairs, max_tokens=1),
            SummarizingCompaction(max_messages=1, **summarize_kwargs),
        ],
        target_fraction=config.max_fraction,
        context_window=window,
        fallback_context_window=config.fallback_context_window,
    )


@dataclass
class RunCompaction(WrapperCapability[Any]):
    """The harness strategy of one binding, with the refusal that says why, the frames that say a
    summary is running, and the booking of what it cost."""

    strategy: str = "summarize"
    max_fraction: float = 0.9
    context_window: int | None = None
    fallback_context_window: int = 200_000
    resources: RunResources = field(default_factory=RunResources)
    said_cannot_work: bool = False

    def window_for(self, model) -> int:
        if self.context_window:
            return self.context_window
        return resolve_context_window(model) or self.fallback_context_window

    def _tell(self, payload: dict) -> None:
        notify = self.resources.on_compaction
        if notify is not None:
            notify(payload)

    async def before_model_request(self, ctx: RunContext[Any], request_context):
        model = request_context.model
        window = self.window_for(model)
        trigger = max(1, int(window * self.max_fraction))
        messages = list(ctx.messages)
        buys = self.strategy in SUMMARIZING
        overhead = overhead_tokens(messages)
        if overhead is None and message_tokens(messages) <= trigger:
            # Nothing measured yet (a conversation's first request): the messages alone decide.
            return request_context
        if buys:
            if overhead is not None and overhead >= trigger:
                if not self.said_cannot_work:
                    # It describes a configuration, not an event: once per run.
                    self.said_cannot_work = True
                    self._tell(
                        {
                            "phase": "skipped",
                            "strategy": self.strategy,
                            "overhead_tokens": overhead,
                            "window_tokens": window,
                            "trigger_tokens": trigger,
                        }
                    )
                return request_context
        estimate = estimate_context_tokens(
            messages, model_request_parameters=request_context.model_request_parameters
        )
        announce = buys and estimate > trigger
        if announce:
            self._tell(
                {
                    "phase": "started",
                    "strategy": self.strategy,
                    "messages": len(messages),
                    "context_tokens": estimate,
                    "window_tokens": window,
                }
            )
        async with measured(ctx.usage, kind=LEDGER_KIND) as spent:
            result = await self.wrapped.before_model_request(ctx, request_context)
        if announce:
            self._tell(
                {
                    "phase": "finished",
                    "strategy": self.strategy,
                    "messages": len(result.messages),
                    "summary_input_tokens": spent.input_tokens,
                    "summary_output_tokens": spent.output_tokens,
                }
            )
        return result


def compaction_capabilities(binding, resources: RunResources) -> list[Any]:
    config = parsed_config(CAPABILITY_ID, binding)
    window = config.context_window or resources.model_context_window
    return [
        RunCompaction(
            wrapped=_strategy(config, window),
            strategy=config.strategy,
            max_fraction=config.max_fraction,
            context_window=window,
            fallback_context_window=config.fallback_context_window,
            resources=resources,
        )
    ]


def build_compaction_toolset(binding, context):
    return None  # no tools: it trims the history before each request


__all__ = [
    "RunCompaction",
    "build_compaction_toolset",
    "compaction_capabilities",
    "overhead_tokens",
]
