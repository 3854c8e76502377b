"""From a capability's declaration to the toolset a run offers: one path for all six.

The registry is the single source of a tool's identity and text: the tool's stable id, the
``<summary>``/``<returns>`` description the model reads, and the configurations that offer it.
A builder hands over its functions keyed by tool id; this module offers exactly the declared tools
the binding's configuration offers — under the binding's rename, if any — so what a capability
declares and what the model sees cannot drift apart.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Mapping
from typing import Any

from pydantic_ai import Tool
from pydantic_ai.toolsets import FunctionToolset

from ..registry import Capability, get_capability
from ..tool_view import seen_tool

# Metadata on every tool this deployment builds: the stable id an approval gate and the
# transcript refer to, whatever name the model sees.
TOOL_ID_METADATA = "agenticos_tool_id"
CAPABILITY_METADATA = "agenticos_capability"
# The offline model's /steps calls a tool carrying this and requiring no argument (the value of
# apps.runs.offline.HARMLESS_TOOL_METADATA; capabilities sits below runs and does not import it).
HARMLESS_METADATA = "agenticos_harmless"


def binding_config(binding: Any) -> dict[str, Any]:
    config = (
        binding.get("config") if isinstance(binding, Mapping) else getattr(binding, "config", None)
    )
    return dict(config or {})


def binding_overrides(binding: Any) -> dict[str, Any]:
    overrides = (
        binding.get("tool_overrides")
        if isinstance(binding, Mapping)
        else getattr(binding, "tool_overrides", None)
    )
    return dict(overrides or {})


def parsed_config(capability_id: str, binding: Any):
    return get_capability(capability_id).parse_config(binding_config(binding))


# The tools a builder hands over are closures made per run, but each is the same code with the same
# signature every time: the argument schema pydantic-ai derives from it (about a millisecond per
# tool) is derived once per process and reused with the run's own function. Without this, a worker
# assembling fifty runs spent most of prepare() rebuilding the same schemas (docs/runner.md).
_first_tools: dict[tuple[Any, str], Tool] = {}
_first_tools_lock = threading.Lock()


def _add_tool(
    toolset: FunctionToolset, function, *, name: str, description: str, metadata: dict
) -> None:
    code = getattr(function, "__code__", None)
    first = _first_tools.get((code, name)) if code is not None else None
    if first is None:
        tool = toolset.add_function(function, name=name, description=description, metadata=metadata)
        if code is not None:
            with _first_tools_lock:
                _first_tools.setdefault((code, name), tool)
        return
    toolset.add_tool(
        Tool(
            function,
            name=name,
            description=description,
            metadata=metadata,
            docstring_format=first.docstring_format,
            require_parameter_descriptions=first.require_parameter_descriptions,
            strict=first.strict,
            sequential=first.sequential,
            requires_approval=first.requires_approval,
            timeout=first.timeout,
            defer_loading=first.defer_loading,
            include_return_schema=first.include_return_schema,
            # The schema describes the code's signature; the call goes to this run's function.
            function_schema=dataclasses.replace(first.function_schema, function=function),
        )
    )


def declared_toolset(
    capability_id: str,
    binding: Any,
    functions: Mapping[str, Callable[..., Any]],
    *,
    toolset_id: str,
    harmless: frozenset[str] = frozenset(),
) -> FunctionToolset | None:
    """A toolset of the declared tools ``binding``'s config offers, each bound to ``functions[id]``.

    ``functions`` must cover exactly the declared tools: a function for an undeclared tool, or a
    declared tool without one, is a programming error raised here rather than a silent drift.
    Returns None when the configuration offers no tool.
    """
    capability: Capability = get_capability(capability_id)
    declared = set(capability.tool_ids)
    if set(functions) != declared:
        missing = ", ".join(sorted(declared - set(functions))) or "none"
        extra = ", ".join(sorted(set(functions) - declared)) or "none"
        raise RuntimeError(
            f"{capability_id}: the functions do not match the declared tools (missing: {missing}; undeclared: {extra})"
        )
    overrides = binding_overrides(binding)
    config = capability.parse_config(binding_config(binding))
    toolset = FunctionToolset(id=toolset_id)
    for spec in capability.offered_tools(config):
        seen = seen_tool(spec, overrides)
        metadata: dict[str, Any] = {TOOL_ID_METADATA: spec.id, CAPABILITY_METADATA: capability_id}
        if spec.id in harmless:
            metadata[HARMLESS_METADATA] = True
        _add_tool(
            toolset,
            functions[spec.id],
            name=seen.name,
            description=seen.description,
            metadata=metadata,
        )
    return toolset if toolset.tools else None
