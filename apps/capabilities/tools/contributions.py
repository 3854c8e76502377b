"""What the six capabilities contribute besides tools, as pure functions the runner calls.

- :func:`instructions_for` — text for the instructions (system prompt): clock's date and time,
  context's framed inject files, planning's static guidance. Never the plan itself.
- :func:`model_settings_for` — model settings: thinking's ``effort``.
- :func:`capabilities_for` — pydantic-ai capabilities to add to the agent: planning's trailing
  plan reminder, which must see every model request and so cannot be an instruction; the
  provider-run web methods (``web_fetch`` native/auto, ``web_search`` native).

Each takes one binding (the spec's ``CapabilityBinding``, or a dict of the same shape) and
dispatches on its id; the ``run_*`` helpers fold over every enabled binding of a spec. ``resources``
is the run's one :class:`~apps.capabilities.run_context.RunResources`, the same object every
builder gets in ``ToolsetContext.resources``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..run_context import RunResources
from .clock import clock_instructions
from .compaction import compaction_capabilities
from .context import context_instructions
from .guardrails import guardrails_capabilities
from .memory_files import memory_instructions
from .planning import planning_capabilities, planning_instructions
from .skills import skills_capabilities
from .system_reminders import system_reminders_capabilities
from .thinking import thinking_model_settings
from .tool_output_limits import tool_output_limits_capabilities
from .tool_search import tool_search_capabilities, tool_search_native_refusal
from .web_fetch import web_fetch_capabilities, web_fetch_native_refusal
from .web_search import web_search_capabilities, web_search_native_refusal

InstructionsFn = Callable[[Any, RunResources], "str | None"]

_INSTRUCTIONS: dict[str, InstructionsFn] = {
    "clock": clock_instructions,
    "context": context_instructions,
    "memory_files": memory_instructions,
    "planning": planning_instructions,
}
_MODEL_SETTINGS: dict[str, Callable[[Any, str], dict[str, Any]]] = {
    "thinking": thinking_model_settings,
}
_CAPABILITIES: dict[str, Callable[[Any, RunResources], list[Any]]] = {
    "planning": planning_capabilities,
    # Each bound skill a deferred capability (pydantic-ai-skills), with read_skill_resource.
    "skills": skills_capabilities,
    # The four guardrail edges: prompt, answer, tool result, tool arguments.
    "guardrails": guardrails_capabilities,
    # Long conversations: the history trimmed before each request (a harness strategy).
    "compaction": compaction_capabilities,
    # Instruction reminders at the tail of a request, on the conversation's cadence.
    "system_reminders": system_reminders_capabilities,
    # An oversized tool return reduced once, when produced (spill, truncate or summarize).
    "tool_output_limits": tool_output_limits_capabilities,
    # The provider-run methods: pydantic-ai's WebFetch / WebSearch capabilities.
    "web_fetch": web_fetch_capabilities,
    "web_research": web_search_capabilities,
    # pydantic-ai's ToolSearch, over the MCP tools the runner deferred because it is bound.
    "tool_search": tool_search_capabilities,
}

# A provider-run method on a model that has no such tool: refused when the run assembles, with a
# sentence, instead of pydantic-ai's error in the middle of the first request.
_NATIVE_REFUSALS: dict[str, Callable[[Any, Any], str | None]] = {
    "web_fetch": web_fetch_native_refusal,
    "web_research": web_search_native_refusal,
    "tool_search": tool_search_native_refusal,
}


def _binding_id(binding: Any) -> str:
    return binding["id"] if isinstance(binding, Mapping) else binding.id


def _enabled(binding: Any) -> bool:
    value = (
        binding.get("enabled", True)
        if isinstance(binding, Mapping)
        else getattr(binding, "enabled", True)
    )
    return bool(value)


def instructions_for(binding: Any, resources: RunResources) -> str | None:
    """This binding's contribution to the instructions, or None."""
    contribute = _INSTRUCTIONS.get(_binding_id(binding))
    if contribute is None:
        return None
    return contribute(binding, resources) or None


def model_settings_for(binding: Any, provider: str) -> dict[str, Any]:
    """This binding's model settings for ``provider`` (``openai``, ``anthropic``, ``offline`` …)."""
    contribute = _MODEL_SETTINGS.get(_binding_id(binding))
    return contribute(binding, provider) if contribute is not None else {}


def capabilities_for(binding: Any, resources: RunResources) -> list[Any]:
    """pydantic-ai capabilities this binding adds to the agent (built over the run's resources)."""
    contribute = _CAPABILITIES.get(_binding_id(binding))
    return contribute(binding, resources) if contribute is not None else []


def run_instructions(bindings: Iterable[Any], resources: RunResources) -> list[str]:
    """Every enabled binding's instructions, in binding order."""
    return [text for b in bindings if _enabled(b) and (text := instructions_for(b, resources))]


def run_model_settings(bindings: Iterable[Any], provider: str) -> dict[str, Any]:
    settings: dict[str, Any] = {}
    for b in bindings:
        if _enabled(b):
            settings.update(model_settings_for(b, provider))
    return settings


def run_capabilities(bindings: Iterable[Any], resources: RunResources) -> list[Any]:
    return [cap for b in bindings if _enabled(b) for cap in capabilities_for(b, resources)]


def run_native_refusals(bindings: Iterable[Any], model: Any) -> list[str]:
    """Why the enabled bindings cannot run on ``model`` (a pydantic-ai model); empty when they can."""
    refusals = []
    for b in bindings:
        check = _NATIVE_REFUSALS.get(_binding_id(b))
        if _enabled(b) and check is not None and (sentence := check(b, model)):
            refusals.append(sentence)
    return refusals
