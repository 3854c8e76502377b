"""tool_search ("Tool search"): the agent finds a tool in a large set instead of carrying every
schema in every request — pydantic-ai's ``ToolSearch`` capability.

It has no tools of its own, and on its own it does nothing: the library's search only looks at
tools marked *deferred*. Binding it is what marks the agent's MCP toolsets deferred (the runner
does that, ``apps.mcp.client.connection_toolset(defer=True)``); the registry's own tools stay
visible, being few and chosen per agent. A deferred MCP tool is revealed under its real prefixed
(or renamed) name, so the approval gate and a binding's rename still reach it: ``ToolSearch`` sits
outermost and reads the names the renames already applied.

``strategy``: ``auto`` — the provider's native search where it has one, the local keyword search
elsewhere (never fails); ``keywords`` — always local; ``bm25`` / ``regex`` — Anthropic's native
algorithm, refused when the run assembles on any other model instead of being replaced by another
algorithm. ``max_results`` bounds the local search (ignored by native search). Nothing here calls
a model: the local strategies are Python, the native ones ride the provider's own request.
"""

from __future__ import annotations

from typing import Any

from pydantic_ai.capabilities import ToolSearch
from pydantic_ai.native_tools._tool_search import ToolSearchTool

from ._toolsets import parsed_config
from .web_fetch import model_runs_native

CAPABILITY_ID = "tool_search"
NATIVE_ONLY = ("bm25", "regex")


def build_tool_search_toolset(binding, context):
    # No tools of its own: the capability below is its whole contribution. Registering a builder
    # that adds nothing is what makes it available (and keeps it out of unbuilt_capabilities).
    return None


def tool_search_capabilities(binding, resources) -> list[Any]:
    config = parsed_config(CAPABILITY_ID, binding)
    strategy = None if config.strategy == "auto" else config.strategy
    return [ToolSearch(strategy=strategy, max_results=config.max_results)]


def tool_search_native_refusal(binding, model) -> str | None:
    config = parsed_config(CAPABILITY_ID, binding)
    if config.strategy not in NATIVE_ONLY:
        return None
    if model_runs_native(model, ToolSearchTool) and getattr(model, "system", "") == "anthropic":
        return None
    return (
        f"Tool search is set to Anthropic's native {config.strategy} search, which this agent's "
        "model does not have: set strategy to auto or keywords, or pick an Anthropic model."
    )
