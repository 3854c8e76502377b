"""What a toolset builder is handed: how a binding becomes the tools a run offers.

The capability registry (apps.capabilities) declares what each capability's tools are; the code
that implements them registers a builder in ``apps.capabilities.implementations`` (which is what
makes a capability *available*). ``prepare()`` looks every enabled binding up there and hands its
builder what the run resolved beforehand (STYLE.md: a tool never reaches into the database on its
own). A binding whose capability has no builder yet contributes no tools and is listed in
``PreparedRun.unbuilt_capabilities``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


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
    # The subagents capability's delegates, resolved before the run (apps.runs.delegation
    # ``DelegationScope``): None when this agent delegates to nobody (or is at the depth limit).
    delegation: Any = None
