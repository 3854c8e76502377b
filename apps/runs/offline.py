"""The offline model: deterministic, built on pydantic-ai's FunctionModel, priced by a rate card.

Its behaviour is a contract (MAP.md, "Offline and real models"), because demos, tests and
operators script it:

- ``/call TOOL {json}`` calls the tool the model sees as TOOL with those arguments, then answers
  with one sentence quoting the result. Several ``/call`` lines are parallel calls in one response.
- ``/steps N`` takes N model requests (each a call of a harmless tool it has, or its own ``think``
  tool — "a short thought" — when it has none) before answering: N + 1 requests in all.
- ``/ask`` asks the person through ``ask_user_question`` when the agent has that tool.
- Anything else: a short deterministic answer derived from the message; the time or date from
  the clock capability's instructions when the agent has it and the message asks for them.
- Usage: about one token per four characters of everything sent (instructions, tool
  definitions, history) and received. The rate card ($3 in / $15 out per million) lives in
  ``apps.spend.pricing``.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from pydantic_ai import _utils
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    ModelResponsePart,
    RetryPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models import ModelRequestParameters, StreamedResponse
from pydantic_ai.models.function import (
    AgentInfo,
    DeltaToolCall,
    FunctionModel,
    FunctionStreamedResponse,
)
from pydantic_ai.settings import ModelSettings
from pydantic_ai.toolsets import FunctionToolset
from pydantic_ai.usage import RequestUsage

from apps.capabilities.tools.planning import is_plan_reminder
from apps.spend.tokens import messages_chars, part_chars, tokens_for, tool_definitions_chars

OFFLINE_MODEL_NAME = "offline"
# Metadata a toolset builder puts on a tool that is safe to call with no arguments; /steps calls it.
HARMLESS_TOOL_METADATA = "agenticos_harmless"
THINK_TOOL_NAME = "think"
ASK_TOOL_NAME = "ask_user_question"
QUOTE_LIMIT = 300

_CALL_LINE = re.compile(r"^\s*/call\s+(?P<name>[A-Za-z0-9_\-]+)\s*(?P<args>.*)$")
_STEPS_LINE = re.compile(r"^\s*/steps\s+(?P<count>\d+)\s*$", re.MULTILINE)
_ASK_LINE = re.compile(r"^\s*/ask\b(?P<rest>.*)$", re.MULTILINE)
_TIME_WORDS = re.compile(r"\b(time|date|today|day is it|what day|hour|clock)\b", re.IGNORECASE)
# The clock capability's instructions carry a line like "Current date and time: 2025-01-31 09:00 (Europe/Madrid)".
# Anchored to the line's start: "Your setup" also mentions the clock in prose.
_CLOCK_LINE = re.compile(r"^\s*Current date and time:.*$", re.MULTILINE)


def request_tokens(messages: list[ModelMessage], info: AgentInfo) -> int:
    """About one token per four characters of everything sent: instructions, tool definitions, history."""
    chars = (
        len(info.instructions or "")
        + tool_definitions_chars(info.function_tools)
        + messages_chars(messages)
    )
    return tokens_for(chars)


def response_tokens(parts: Sequence[ModelResponsePart]) -> int:
    return tokens_for(sum(part_chars(part) for part in parts))


# --- the script ---------------------------------------------------------------------------------


def _prompt_text(part: UserPromptPart) -> str:
    if isinstance(part.content, str):
        return part.content
    return " ".join(item for item in part.content if isinstance(item, str))


def _current_turn(messages: list[ModelMessage]) -> tuple[str, list[ModelMessage]]:
    """The latest user prompt and the messages after it (this turn's responses and tool returns)."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if isinstance(message, ModelRequest):
            # Planning's trailing reminder is a prompt part too; it is not the person speaking.
            prompts = [
                p
                for p in message.parts
                if isinstance(p, UserPromptPart) and not is_plan_reminder(p)
            ]
            if prompts:
                return "\n".join(_prompt_text(p) for p in prompts), messages[index + 1 :]
    return "", list(messages)


def _quote(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= QUOTE_LIMIT else text[: QUOTE_LIMIT - 1] + "…"


def _results_sentence(request: ModelMessage | None) -> str:
    parts = request.parts if isinstance(request, ModelRequest) else []
    # pydantic-ai 2.x records a retry as the call's own return part with outcome "retried".
    returns = [p for p in parts if isinstance(p, ToolReturnPart) and p.outcome != "retried"]
    retries = [
        p
        for p in parts
        if isinstance(p, RetryPromptPart)
        or (isinstance(p, ToolReturnPart) and p.outcome == "retried")
    ]
    if retries and not returns:
        first = retries[0]
        text = (
            first.model_response()
            if isinstance(first, RetryPromptPart)
            else first.model_response_str()
        )
        return f"The tool call did not work: {_quote(text)}"
    if len(returns) == 1:
        return (
            f'The tool {returns[0].tool_name} returned "{_quote(returns[0].model_response_str())}".'
        )
    if returns:
        quoted = "; ".join(
            f'{p.tool_name} returned "{_quote(p.model_response_str())}"' for p in returns
        )
        return f"The tools answered: {quoted}."
    return "I have nothing more to add."


def _parse_calls(prompt: str) -> list[tuple[str, dict] | tuple[str, str]]:
    calls: list = []
    for line in prompt.splitlines():
        match = _CALL_LINE.match(line)
        if not match:
            continue
        raw = match.group("args").strip() or "{}"
        try:
            args = json.loads(raw)
        except ValueError:
            calls.append((match.group("name"), f"its arguments are not JSON: {_quote(raw)}"))
            continue
        if not isinstance(args, dict):
            calls.append((match.group("name"), "its arguments must be a JSON object"))
            continue
        calls.append((match.group("name"), args))
    return calls


def _harmless_tool(info: AgentInfo) -> str | None:
    for tool_def in info.function_tools:
        if (
            tool_def.name != THINK_TOOL_NAME
            and (tool_def.metadata or {}).get(HARMLESS_TOOL_METADATA)
            and not tool_def.parameters_json_schema.get("required")
        ):
            return tool_def.name
    if any(t.name == THINK_TOOL_NAME for t in info.function_tools):
        return THINK_TOOL_NAME
    return None


def _default_answer(prompt: str, info: AgentInfo) -> str:
    if _TIME_WORDS.search(prompt):
        clock = _CLOCK_LINE.search(info.instructions or "")
        if clock:
            return f"According to my clock: {clock.group(0).strip()}"
        return "I have no clock, so I cannot tell the date or time."
    words = prompt.split()
    if not words:
        return "You sent an empty message."
    return f'You said "{_quote(prompt)}" ({len(words)} words). This is the offline model answering.'


def script(messages: list[ModelMessage], info: AgentInfo) -> list[ModelResponsePart]:
    """The offline model's response to ``messages``: a pure function of them and the tools."""
    prompt, turn = _current_turn(messages)
    responses = [m for m in turn if isinstance(m, ModelResponse)]
    last = messages[-1] if messages else None
    known_tools = {t.name for t in info.function_tools}

    calls = _parse_calls(prompt)
    if calls:
        if responses:
            return [TextPart(_results_sentence(last))]
        for name, args in calls:
            if isinstance(args, str):
                return [TextPart(f"I cannot call {name}: {args}.")]
            if name not in known_tools:
                return [TextPart(f"I have no tool called {name}.")]
        return [
            ToolCallPart(name, args, tool_call_id=f"offline-{len(messages)}-{n}")
            for n, (name, args) in enumerate(calls)
        ]

    steps = _STEPS_LINE.search(prompt)
    if steps:
        wanted = int(steps.group("count"))
        if len(responses) < wanted:
            tool_name = _harmless_tool(info)
            if tool_name is None:
                return [
                    TextPart(
                        f"I cannot take steps: I have no harmless tool (step {len(responses) + 1})."
                    )
                ]
            args = (
                {"thought": f"step {len(responses) + 1} of {wanted}"}
                if tool_name == THINK_TOOL_NAME
                else {}
            )
            return [ToolCallPart(tool_name, args, tool_call_id=f"offline-{len(messages)}-step")]
        return [TextPart(f"Done after {wanted} steps.")]

    ask = _ASK_LINE.search(prompt)
    if ask:
        if responses:
            return [TextPart(_results_sentence(last))]
        if ASK_TOOL_NAME not in known_tools:
            return [
                TextPart(
                    "I cannot ask you anything here: this agent has no ask_user_question tool."
                )
            ]
        question = ask.group("rest").strip() or "How would you like me to continue?"
        return [
            ToolCallPart(
                ASK_TOOL_NAME,
                {
                    "questions": [
                        {
                            "header": "Choice",
                            "question": question,
                            "options": [
                                {"label": "Yes", "description": "Go ahead."},
                                {"label": "No", "description": "Stop here."},
                            ],
                            "multi_select": False,
                        }
                    ]
                },
                tool_call_id=f"offline-{len(messages)}-ask",
            )
        ]

    if responses:
        return [TextPart(_results_sentence(last))]
    return [TextPart(_default_answer(prompt, info))]


# --- the model ----------------------------------------------------------------------------------


async def _respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    parts = script(messages, info)
    usage = RequestUsage(
        input_tokens=request_tokens(messages, info), output_tokens=response_tokens(parts)
    )
    return ModelResponse(parts=parts, usage=usage)


async def _stream(
    messages: list[ModelMessage], info: AgentInfo
) -> AsyncIterator[str | dict[int, DeltaToolCall]]:
    parts = script(messages, info)
    calls = [p for p in parts if isinstance(p, ToolCallPart)]
    if calls:
        yield {
            index: DeltaToolCall(
                name=call.tool_name,
                json_args=call.args_as_json_str(),
                tool_call_id=call.tool_call_id,
            )
            for index, call in enumerate(calls)
        }
        return
    words = "".join(p.content for p in parts if isinstance(p, TextPart)).split(" ")
    # A few words per delta, so a client sees the answer arrive.
    for start in range(0, len(words), 4):
        chunk = " ".join(words[start : start + 4])
        yield chunk if start == 0 else " " + chunk


@dataclass
class _OfflineStreamedResponse(FunctionStreamedResponse):
    """FunctionModel's streamed response with the offline model's own token count."""

    _input_tokens: int = 0

    async def _get_event_iterator(self):
        async for event in super()._get_event_iterator():
            yield event
        self._usage = RequestUsage(
            input_tokens=self._input_tokens,
            output_tokens=response_tokens(self._parts_manager.get_parts()),
        )


class OfflineModel(FunctionModel):
    """The deterministic offline model. Labelled as offline everywhere it appears."""

    def __init__(self) -> None:
        super().__init__(_respond, stream_function=_stream, model_name=OFFLINE_MODEL_NAME)
        self._system = "offline"

    @classmethod
    def supported_native_tools(cls):
        # No provider stands behind it to run a native search or fetch (FunctionModel claims them
        # all, for tests): a web method set to ``auto`` gets this deployment's own tool here.
        return frozenset()

    @asynccontextmanager
    async def request_stream(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
        run_context=None,
    ) -> AsyncGenerator[StreamedResponse]:
        model_settings, model_request_parameters = self.prepare_request(
            model_settings, model_request_parameters
        )
        info = _agent_info(messages, model_settings, model_request_parameters)
        stream: _utils.PeekableAsyncStream[Any] = _utils.PeekableAsyncStream(
            _stream(messages, info)
        )
        try:
            yield _OfflineStreamedResponse(
                model_request_parameters=model_request_parameters,
                _model_name=self._model_name,
                _iter=stream,
                _input_tokens=request_tokens(messages, info),
            )
        finally:
            await stream.aclose()


def _agent_info(messages, model_settings, model_request_parameters) -> AgentInfo:
    from pydantic_ai._instrumentation import get_instructions

    return AgentInfo(
        function_tools=model_request_parameters.declared_function_tools,
        allow_text_output=model_request_parameters.allow_text_output,
        output_tools=model_request_parameters.output_tools,
        model_settings=model_settings,
        model_request_parameters=model_request_parameters,
        instructions=get_instructions(messages, model_request_parameters),
    )


def offline_toolset() -> FunctionToolset:
    """The offline model's own ``think`` tool: its "short thought" when /steps finds no harmless tool."""
    toolset = FunctionToolset(id="offline")

    @toolset.tool_plain(name=THINK_TOOL_NAME, metadata={HARMLESS_TOOL_METADATA: True})
    def think(thought: str = "") -> str:
        """Note a short thought before the next step. Returns "noted"."""
        return "noted"

    return toolset
