"""Counting characters of pydantic-ai messages, for the offline model's usage and for the budget
guard's estimate of a request before it is sent (about four characters per token)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from pydantic_ai.messages import (
    ModelMessage,
    RetryPromptPart,
    SystemPromptPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.tools import ToolDefinition

CHARS_PER_TOKEN = 4


def tokens_for(chars: int) -> int:
    return -(-chars // CHARS_PER_TOKEN) if chars > 0 else 0


def _content_chars(content: Any) -> int:
    if isinstance(content, str):
        return len(content)
    if isinstance(content, Sequence):
        return sum(len(item) if isinstance(item, str) else 0 for item in content)
    return len(str(content))


def part_chars(part: Any) -> int:
    if isinstance(part, (UserPromptPart, SystemPromptPart)):
        return _content_chars(part.content)
    if isinstance(part, ToolReturnPart):
        return len(part.tool_name) + len(part.model_response_str())
    if isinstance(part, RetryPromptPart):
        return len(part.model_response())
    if isinstance(part, (TextPart, ThinkingPart)):
        return len(part.content)
    if isinstance(part, ToolCallPart):
        return len(part.tool_name) + len(part.args_as_json_str())
    return 0


def messages_chars(messages: Iterable[ModelMessage]) -> int:
    return sum(part_chars(part) for message in messages for part in message.parts)


def tool_definitions_chars(tool_defs: Iterable[ToolDefinition]) -> int:
    return sum(tool_text_chars(t) + schema_chars(t.parameters_json_schema) for t in tool_defs)


def tool_text_chars(tool_def: ToolDefinition) -> int:
    return len(tool_def.name) + len(tool_def.description or "")


def schema_chars(schema: dict) -> int:
    return len(json.dumps(schema))
