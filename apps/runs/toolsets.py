"""Toolset builders, keyed by capability id: how a binding becomes the tools a run offers.

The capability registry (apps.capabilities) declares what each capability's tools are; the code
that implements them registers a builder here. ``prepare()`` looks every enabled binding up and
hands its builder what the run resolved beforehand (STYLE.md: a tool never reaches into the
database on its own). A binding whose capability has no builder yet contributes no tools and is
listed in ``PreparedRun.unbuilt_capabilities``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic_ai.toolsets import AbstractToolset


@dataclass(frozen=True)
class ToolsetContext:
    """What a builder may use: resolved before the run, never fetched by a tool itself."""

    organization_id: int
    agent_id: int
    run_id: int
    user_id: int | None
    surface: str
    # Decrypted key of the binding's secret, when it has one.
    secret_value: str | None = None
    extras: dict[str, Any] = field(default_factory=dict)


# builder(binding, context) -> a toolset, or None when this configuration offers no tool.
ToolsetBuilder = Callable[[Any, ToolsetContext], AbstractToolset | None]

_BUILDERS: dict[str, ToolsetBuilder] = {}


def register_toolset(capability_id: str, builder: ToolsetBuilder) -> ToolsetBuilder:
    """Register the builder of one capability's tools (one per capability; re-registering replaces)."""
    _BUILDERS[capability_id] = builder
    return builder


def unregister_toolset(capability_id: str) -> None:
    _BUILDERS.pop(capability_id, None)


def toolset_builder(capability_id: str) -> ToolsetBuilder | None:
    return _BUILDERS.get(capability_id)
