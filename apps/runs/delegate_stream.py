"""A delegate's streamed text under the parent's output check (guardrails ``*_out``).

A delegation streams its text to the run's client as ``subagent_text_delta`` frames, through the
delegation runtime's frame sender. When the parent run checks its output, that sender is a
:class:`DelegateStreamCheck`: each delegation's text is held until its part ends (the next frame
of the same delegation — a tool call, its result, its end — or the end of the delegation), checked
with the parent's output edge, and only then sent, redacted. So a secret split across a delegate's
stream chunks is caught exactly as in the parent's own answer, and a delegate cannot show what
the parent's guardrail would have withheld.

A blocked term cannot end the run from inside the delegation — the delegation turns any failure
into a failed delegation the parent's model reads — so the check keeps the block, drops the
blocked text (and every delegate text after it), and the runner raises it at the parent's next
step: before the delegation's answer is shown as the ``task`` call's result, and before the
parent's model reads it (:meth:`DelegateStreamCheck.raise_if_blocked`). The run ends
``guardrail_blocked``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from apps.capabilities.tools.guardrails import (
    SEEN_TAIL_CHARS,
    GuardrailBlocked,
    OutputStreamFilter,
)

from .events import SubagentTextDeltaFrame

TEXT_DELTA = "subagent_text_delta"
# A distinct edge: the parent's own response was not blocked, so it is kept in the transcript
# (the runner drops the last response only on an "out" / "args" block).
DELEGATE_EDGE = "delegate"
BLOCKED_SENTENCE = (
    "The guardrail ended the run: a delegate's answer contained a blocked term, or a secret or "
    "personal data split across two of its parts."
)


class DelegateStreamCheck:
    """The delegation runtime's frame sender when the parent checks its output."""

    def __init__(self, output_filter: OutputStreamFilter, send: Callable[..., Any]) -> None:
        self.check = output_filter.check
        self.send = send
        self.held: dict[str, list[str]] = {}
        # Per delegation, the tail of what it already showed (a secret split across two parts).
        self.shown: dict[str, str] = {}
        self.blocked: GuardrailBlocked | None = None

    def __call__(self, *frames) -> None:
        out: list = []
        for frame in frames:
            task_id = frame.get("task_id")
            if frame.get("type") == TEXT_DELTA:
                if self.blocked is None and frame.get("delta"):
                    self.held.setdefault(task_id, []).append(frame["delta"])
                continue
            if task_id in self.held:
                out.extend(self._release(task_id))
            out.append(frame)
        if out:
            self.send(*out)

    def _release(self, task_id: str) -> list[SubagentTextDeltaFrame]:
        text = "".join(self.held.pop(task_id, []))
        if not text or self.blocked is not None:
            return []
        shown = self.shown.get(task_id, "")
        try:
            cleaned = self.check.check(text)
            if shown and self.check.redact(shown + text) != self.check.redact(shown) + cleaned:
                raise GuardrailBlocked(DELEGATE_EDGE, BLOCKED_SENTENCE)
            if self.check.blocked_term(self.check.redact(shown + text)):
                raise GuardrailBlocked(DELEGATE_EDGE, BLOCKED_SENTENCE)
        except GuardrailBlocked:
            self.blocked = GuardrailBlocked(DELEGATE_EDGE, BLOCKED_SENTENCE)
            self.held.clear()
            return []
        self.shown[task_id] = (shown + cleaned)[-SEEN_TAIL_CHARS:]
        return [SubagentTextDeltaFrame(type="subagent_text_delta", task_id=task_id, delta=cleaned)]

    def flush(self) -> None:
        """Whatever is still held (a delegation that stopped without another frame)."""
        out = [frame for task_id in list(self.held) for frame in self._release(task_id)]
        if out:
            self.send(*out)

    def raise_if_blocked(self) -> None:
        if self.blocked is not None:
            raise self.blocked


def delegate_stream_check(
    output_filter: OutputStreamFilter | None, send: Callable[..., Any]
) -> DelegateStreamCheck | None:
    """The check over the delegates' text when the parent checks its output, else None."""
    return DelegateStreamCheck(output_filter, send) if output_filter is not None else None
