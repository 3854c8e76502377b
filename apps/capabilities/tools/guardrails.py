"""guardrails: the text moving through a run, inspected at four edges, scrubbed or refused.

No tools. The checks are pydantic-ai-harness's ready-made detectors (``secret_data``,
``personal_data``, ``blocked_keywords``) plus a phone-number detector on libphonenumber, which the
harness does not ship. An agent is data, so its binding selects and parameterises the detectors
instead of carrying Python.

=================  ==========================================  ====================================
edge               reads                                       where it acts
=================  ==========================================  ====================================
input  (``_in``)   the user prompts a request carries           ``before_model_request``, on the
                                                               request's own copy: the model reads
                                                               the clean prompt, the conversation
                                                               keeps what the person typed
output (``_out``)  the agent's text and reasoning               ``OutputStreamFilter`` in the
                                                               runner's stream (held until a part
                                                               is complete) and
                                                               ``after_model_request`` for the
                                                               stored response
tool   (``_tool``) what a tool returned, before the model       ``after_tool_execute``: the one
                   reads it                                    guard on untrusted content
args   (``_args``) every string the agent passes to a tool      ``after_model_request``: the
                                                               redacted value is what the tool
                                                               receives, the transcript keeps and
                                                               the stream shows
=================  ==========================================  ====================================

A redaction rewrites and the run goes on (an answer that quoted a key did its work anyway); a
blocked keyword raises :class:`GuardrailBlocked`, which the runner books as the run's own outcome,
``guardrail_blocked``, next to ``budget_exceeded`` — a refusal is the platform working, and an
operator filtering for trouble should find it rather than read it as a completed answer. Reasoning
is not the answer: a blocked term there withholds that reasoning part instead of ending the run.

A phone number is redacted only when it is a real one: libphonenumber's ``STRICT_GROUPING``
accepts a candidate only when it fits its country's numbering plan and its separators fall where
that country groups digits, so a date, an amount or an order number passes. A number written with
``+`` names its own country and is redacted whatever ``phone_regions`` says; a national number is
read against each listed region. Each region is another pass over the text, so the detector's size
limits (200,000 characters and 10,000 digits with up to four regions) shrink in proportion above
four, to 50,000 / 2,500 at sixteen; a text above them ends the run, because passing it unread
would pass every number in it too.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import phonenumbers
from pydantic_ai import RunContext
from pydantic_ai.capabilities import AbstractCapability, CapabilityOrdering
from pydantic_ai.messages import (
    ModelRequest,
    ModelResponse,
    PartDeltaEvent,
    PartEndEvent,
    PartStartEvent,
    TextPart,
    TextPartDelta,
    ThinkingPart,
    ThinkingPartDelta,
    ToolCallPart,
    ToolReturn,
    UserPromptPart,
)
from pydantic_ai_harness.guardrails.detectors import (
    blocked_keywords,
    personal_data,
    secret_data,
)

from ..catalog.utility import parse_phone_regions
from ._toolsets import parsed_config

CAPABILITY_ID = "guardrails"
EDGES = ("in", "out", "tool", "args")
REASONING_WITHHELD = "[reasoning withheld by the output guardrail]"
PHONE_PLACEHOLDER = "[redacted:phone]"
# The detector's budget with up to four regions; each region above four is one more pass.
MAX_CHARS = 200_000
MAX_DIGITS = 10_000
FREE_REGIONS = 4
# How much of the text already shown a new part is checked against, so a secret split across two
# parts (the text before a tool call and the text after) is still caught.
SEEN_TAIL_CHARS = 8_000

_TERM_SPLIT = re.compile(r"[,\n]")
_EDGE_NAMES = {
    "in": "the prompt",
    "out": "the agent's answer",
    "tool": "a tool's result",
    "args": "a tool call's arguments",
}

Detector = Callable[[str], str]


class GuardrailBlocked(Exception):
    """A guardrail ended the run; ``sentence`` is what the run's error says (never the text)."""

    def __init__(self, edge: str, sentence: str) -> None:
        self.edge = edge
        self.sentence = sentence
        super().__init__(sentence)


def _terms(value: str) -> list[str]:
    return [term.strip() for term in _TERM_SPLIT.split(value or "") if term.strip()]


def size_limits(region_count: int) -> tuple[int, int]:
    """(characters, digits) the phone detector reads with ``region_count`` regions."""
    passes = max(FREE_REGIONS, region_count)
    return MAX_CHARS * FREE_REGIONS // passes, MAX_DIGITS * FREE_REGIONS // passes


def phone_spans(text: str, regions: Sequence[str]) -> list[tuple[int, int]]:
    """Where ``text`` holds a valid phone number: a ``+`` number whatever the regions, a national
    one read against each of ``regions``, both under ``STRICT_GROUPING``."""
    spans: set[tuple[int, int]] = set()
    # Region "ZZ" (unknown) finds only numbers that name their own country with +.
    for region in ("ZZ", *regions):
        for match in phonenumbers.PhoneNumberMatcher(
            text, region, leniency=phonenumbers.Leniency.STRICT_GROUPING
        ):
            spans.add((match.start, match.end))
    # Overlapping finds (two regions reading the same digits differently): keep the widest.
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start < merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def redact_phones(text: str, regions: Sequence[str], *, edge: str) -> str:
    max_chars, max_digits = size_limits(len(regions))
    if len(text) > max_chars or sum(c.isdigit() for c in text) > max_digits:
        raise GuardrailBlocked(
            edge,
            f"The guardrail ended the run: {_EDGE_NAMES[edge]} was too long to check for personal "
            f"data (at most {max_chars:,} characters and {max_digits:,} digits with "
            f"{max(len(regions), 1)} phone region(s)).",
        )
    spans = phone_spans(text, regions)
    if not spans:
        return text
    pieces, cursor = [], 0
    for start, end in spans:
        pieces.append(text[cursor:start])
        pieces.append(PHONE_PLACEHOLDER)
        cursor = end
    pieces.append(text[cursor:])
    return "".join(pieces)


def _harness(detector) -> Detector:
    def run(text: str) -> str:
        verdict = detector(text)
        return verdict.replacement if verdict.action == "replace" else text

    return run


_SECRETS = _harness(secret_data())
_PII = _harness(personal_data())


@dataclass(frozen=True)
class EdgeCheck:
    """What one edge does: redactors in order, then the blocked terms over what is left."""

    edge: str
    redact_secrets: bool = False
    redact_pii: bool = False
    terms: tuple[str, ...] = ()
    regions: tuple[str, ...] = ()

    @property
    def active(self) -> bool:
        return self.redact_secrets or self.redact_pii or bool(self.terms)

    def redact(self, text: str) -> str:
        if not text:
            return text
        if self.redact_secrets:
            text = _SECRETS(text)
        if self.redact_pii:
            text = _PII(text)
            text = redact_phones(text, self.regions, edge=self.edge)
        return text

    def blocked_term(self, text: str) -> bool:
        if not self.terms or not text:
            return False
        return blocked_keywords(list(self.terms))(text).action == "block"

    def check(self, text: str) -> str:
        """The redacted text; :class:`GuardrailBlocked` when a blocked term is in it."""
        cleaned = self.redact(text)
        if self.blocked_term(cleaned):
            raise GuardrailBlocked(
                self.edge,
                f"The guardrail ended the run: {_EDGE_NAMES[self.edge]} contained a blocked term.",
            )
        return cleaned

    def check_value(self, value: Any) -> Any:
        """Every string inside ``value`` (dicts, lists, tuples) checked; other values as they are."""
        if isinstance(value, str):
            return self.check(value)
        if isinstance(value, dict):
            return {key: self.check_value(item) for key, item in value.items()}
        if isinstance(value, list):
            return [self.check_value(item) for item in value]
        if isinstance(value, tuple):
            return tuple(self.check_value(item) for item in value)
        return value


@dataclass(frozen=True)
class Guard:
    """The four edges of one binding."""

    edges: dict[str, EdgeCheck]

    @classmethod
    def from_config(cls, config) -> Guard:
        regions = tuple(parse_phone_regions(config.phone_regions))
        return cls(
            edges={
                edge: EdgeCheck(
                    edge=edge,
                    redact_secrets=getattr(config, f"redact_secrets_{edge}"),
                    redact_pii=getattr(config, f"redact_pii_{edge}"),
                    terms=tuple(_terms(getattr(config, f"blocked_keywords_{edge}"))),
                    regions=regions,
                )
                for edge in EDGES
            }
        )

    def edge(self, name: str) -> EdgeCheck | None:
        check = self.edges.get(name)
        return check if check is not None and check.active else None

    @property
    def active(self) -> bool:
        return any(check.active for check in self.edges.values())


def guard_for(binding) -> Guard | None:
    """The binding's guard, or None when no edge is configured (then nothing attaches)."""
    guard = Guard.from_config(parsed_config(CAPABILITY_ID, binding))
    return guard if guard.active else None


# --- the capability ------------------------------------------------------------------------------


def _check_prompt_part(part: UserPromptPart, check: EdgeCheck) -> UserPromptPart:
    if isinstance(part.content, str):
        cleaned = check.check(part.content)
        return part if cleaned == part.content else dataclasses.replace(part, content=cleaned)
    content = [check.check(item) if isinstance(item, str) else item for item in part.content]
    if all(a is b for a, b in zip(content, part.content, strict=True)):
        return part
    return dataclasses.replace(part, content=content)


def check_response(response: ModelResponse, guard: Guard) -> ModelResponse:
    """The response as it may be stored: text redacted (a blocked term ends the run), reasoning
    redacted (a blocked term withholds it), tool arguments redacted (a blocked term ends the run)."""
    out, args = guard.edge("out"), guard.edge("args")
    parts = []
    changed = False
    for part in response.parts:
        new = part
        if out is not None and isinstance(part, TextPart):
            new = dataclasses.replace(part, content=out.check(part.content))
        elif out is not None and isinstance(part, ThinkingPart):
            new = dataclasses.replace(part, content=_checked_reasoning(part.content, out))
        elif args is not None and isinstance(part, ToolCallPart):
            raw = part.args_as_dict()
            cleaned = args.check_value(raw)
            if cleaned != raw:
                new = dataclasses.replace(part, args=cleaned)
        changed = changed or new is not part and new != part
        parts.append(new)
    return dataclasses.replace(response, parts=parts) if changed else response


def _checked_reasoning(text: str, check: EdgeCheck) -> str:
    cleaned = check.redact(text)
    return REASONING_WITHHELD if check.blocked_term(cleaned) else cleaned


def _check_tool_result(result: Any, check: EdgeCheck) -> Any:
    if isinstance(result, ToolReturn):
        return dataclasses.replace(
            result,
            return_value=check.check_value(result.return_value),
            content=check.check_value(result.content) if result.content is not None else None,
        )
    if isinstance(result, (str, dict, list, tuple)):
        return check.check_value(result)
    if dataclasses.is_dataclass(result) or hasattr(result, "model_dump"):
        # A structured return: checked in its JSON form, which is what the model reads.
        from pydantic_core import to_jsonable_python

        plain = to_jsonable_python(result)
        cleaned = check.check_value(plain)
        return result if cleaned == plain else cleaned
    return result


@dataclass
class GuardrailsCapability(AbstractCapability[Any]):
    """The input, output, tool-result and tool-argument edges of one run."""

    guard: Guard

    def get_ordering(self) -> CapabilityOrdering:
        # Innermost: the prompt is checked after every other capability shaped the request, and a
        # response or a tool result is checked before any other capability (a spill of a large
        # return, say) sees it, so nothing unchecked is stored or read back.
        return CapabilityOrdering(position="innermost")

    async def before_model_request(self, ctx: RunContext[Any], request_context):
        check = self.guard.edge("in")
        if check is None:
            return request_context
        messages = []
        for message in request_context.messages:
            if isinstance(message, ModelRequest) and any(
                isinstance(p, UserPromptPart) for p in message.parts
            ):
                parts = [
                    _check_prompt_part(p, check) if isinstance(p, UserPromptPart) else p
                    for p in message.parts
                ]
                if any(a is not b for a, b in zip(parts, message.parts, strict=True)):
                    # A copy for this request only: the stored history keeps what was typed.
                    message = dataclasses.replace(message, parts=parts)
            messages.append(message)
        request_context.messages = messages
        return request_context

    async def after_model_request(self, ctx: RunContext[Any], *, request_context, response):
        return check_response(response, self.guard)

    async def after_tool_execute(self, ctx: RunContext[Any], *, call, tool_def, args, result):
        check = self.guard.edge("tool")
        return result if check is None else _check_tool_result(result, check)


def guardrails_capabilities(binding, resources) -> list[AbstractCapability[Any]]:
    guard = guard_for(binding)
    return [] if guard is None else [GuardrailsCapability(guard=guard)]


def build_guardrails_toolset(binding, context):
    return None  # no tools, on purpose: it inspects, it does not act


# --- the stream ----------------------------------------------------------------------------------


@dataclass
class _HeldPart:
    kind: str  # "text" | "thinking"
    chunks: list[str] = field(default_factory=list)


@dataclass
class OutputStreamFilter:
    """Holds every text and reasoning part of a streamed response until it is complete, checks
    it with the output edge, and only then lets it out — so a secret split across stream chunks is
    caught, and a blocked term ends the run before any of the blocked text is shown.

    ``feed(event)`` returns what may be shown now, as ``(kind, text)`` pairs; ``kind`` is
    ``"text"`` or ``"thinking"``. The runner sends those as its usual delta frames."""

    check: EdgeCheck
    _held: dict[int, _HeldPart] = field(default_factory=dict)
    # The tail of what this run already showed, in order, text and reasoning alike.
    _shown: str = ""

    def feed(self, event) -> list[tuple[str, str]]:
        if isinstance(event, PartStartEvent):
            part = event.part
            if isinstance(part, (TextPart, ThinkingPart)):
                held = _HeldPart("text" if isinstance(part, TextPart) else "thinking")
                if part.content:
                    held.chunks.append(part.content)
                self._held[event.index] = held
            return []
        if isinstance(event, PartDeltaEvent):
            growing = self._held.get(event.index)
            delta = event.delta
            if growing is not None and isinstance(delta, (TextPartDelta, ThinkingPartDelta)):
                text = delta.content_delta or ""
                if text:
                    growing.chunks.append(text)
            return []
        if isinstance(event, PartEndEvent):
            ended = self._held.pop(event.index, None)
            return [] if ended is None else self._release(ended)
        return []

    def flush(self) -> list[tuple[str, str]]:
        """Whatever is still held when a stream ends without closing its parts."""
        out: list[tuple[str, str]] = []
        for index in sorted(self._held):
            out.extend(self._release(self._held[index]))
        self._held.clear()
        return out

    def _release(self, held: _HeldPart) -> list[tuple[str, str]]:
        text = "".join(held.chunks)
        if not text:
            return []
        if held.kind == "thinking":
            cleaned = _checked_reasoning(text, self.check)
        else:
            cleaned = self.check.check(text)
        self._across_parts(text, cleaned)
        self._shown = (self._shown + cleaned)[-SEEN_TAIL_CHARS:]
        return [(held.kind, cleaned)]

    def _across_parts(self, text: str, cleaned: str) -> None:
        """A secret or a term split between what was shown and this part: the first half is
        already on screen, so the run ends before the second half goes out."""
        if not self._shown:
            return
        joined = self._shown + text
        redacted_joined = self.check.redact(joined)
        if redacted_joined != self.check.redact(self._shown) + self.check.redact(text) or (
            self.check.blocked_term(redacted_joined)
            and not self.check.blocked_term(self._shown)
            and not self.check.blocked_term(cleaned)
        ):
            raise GuardrailBlocked(
                "out",
                "The guardrail ended the run: the agent's answer carried a secret, personal data or "
                "a blocked term split across two parts, the first of which was already shown.",
            )


def output_stream_filter(bindings: Iterable[Any]) -> OutputStreamFilter | None:
    """The stream filter of a run whose guardrails check the output, else None (it streams as is)."""
    for binding in bindings:
        if getattr(binding, "id", None) != CAPABILITY_ID or not getattr(binding, "enabled", True):
            continue
        guard = guard_for(binding)
        check = guard.edge("out") if guard is not None else None
        if check is not None:
            return OutputStreamFilter(check=check)
    return None


__all__ = [
    "REASONING_WITHHELD",
    "EdgeCheck",
    "Guard",
    "GuardrailBlocked",
    "GuardrailsCapability",
    "OutputStreamFilter",
    "build_guardrails_toolset",
    "check_response",
    "guard_for",
    "guardrails_capabilities",
    "output_stream_filter",
    "phone_spans",
    "redact_phones",
    "size_limits",
]
