"""Spend made inside a run by an agent the budget guard does not wrap: a compaction summary, a
summarized tool result, a model-written reminder.

The harness builds those summarizers itself, outside the run's capabilities, so their requests
never pass the guard. Their usage is added to the run's own usage, though, so a capability
measures the run's usage across its hook (:class:`measured`) and books the difference to the run's
ledger through the booker the runs app registers here (capabilities sits below spend and runs and
imports neither: STYLE.md's hook, the way ``orgs.on_organization_setup`` works). It is recorded,
not refused: the guard refuses the next request if a cap was crossed.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

logger = logging.getLogger(__name__)


class AmbientBooker(Protocol):
    async def book_ambient(self, *, kind: str, input_tokens: int, output_tokens: int) -> Any: ...


_find_booker: Callable[[], AmbientBooker | None] | None = None


def on_ambient_usage(find: Callable[[], AmbientBooker | None]) -> None:
    """Register how to find the booker of the run executing in this context (the run's meter)."""
    global _find_booker
    _find_booker = find


def current_booker() -> AmbientBooker | None:
    return _find_booker() if _find_booker is not None else None


async def book_usage(*, kind: str, input_tokens: int, output_tokens: int) -> bool:
    """Book ``input_tokens``/``output_tokens`` of the run's model to the run; False when no run
    is executing here (a unit test driving a bare agent)."""
    if input_tokens <= 0 and output_tokens <= 0:
        return False
    booker = current_booker()
    if booker is None:
        return False
    await booker.book_ambient(kind=kind, input_tokens=input_tokens, output_tokens=output_tokens)
    return True


class measured:
    """``async with measured(ctx.usage, kind="compaction"):`` books what the block added to the
    run's usage (the summarizer agents run with ``usage=ctx.usage``)."""

    def __init__(
        self,
        usage,
        *,
        kind: str,
        on_booked: Callable[[int, int], Awaitable[None] | None] | None = None,
    ) -> None:
        self.usage = usage
        self.kind = kind
        self.on_booked = on_booked
        self.input_tokens = 0
        self.output_tokens = 0

    async def __aenter__(self) -> measured:
        self._before = (self.usage.input_tokens or 0, self.usage.output_tokens or 0)
        return self

    async def __aexit__(self, *exc) -> None:
        self.input_tokens = (self.usage.input_tokens or 0) - self._before[0]
        self.output_tokens = (self.usage.output_tokens or 0) - self._before[1]
        # Booked even when the block raised: a summary that failed after its request was paid for.
        await book_usage(
            kind=self.kind, input_tokens=self.input_tokens, output_tokens=self.output_tokens
        )
