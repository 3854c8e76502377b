"""Which capabilities this deployment has built: the one table of toolset builders.

A capability is *available* exactly when its code registered a builder here (see
``Capability.available``). The registry API, "Your setup", the tool manifest, the Builder's badge
and the template agent all read that one flag, and the runner looks builders up in the same table,
so no surface can offer a capability a run would not get.

A builder is ``builder(binding, context) -> toolset | None`` (``apps.capabilities.run_context`` types the
context); ``None`` means "this configuration offers no tool", which is how a capability that only
shapes the instructions or comes from elsewhere (``ask_user``'s tool is the approval gate's)
says it is built.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

ToolsetBuilder = Callable[[Any, Any], Any]

_BUILDERS: dict[str, ToolsetBuilder] = {}


def register_toolset(capability_id: str, builder: ToolsetBuilder) -> ToolsetBuilder:
    """Register the builder of one capability's tools (one per capability; re-registering replaces)."""
    _BUILDERS[capability_id] = builder
    return builder


def unregister_toolset(capability_id: str) -> None:
    _BUILDERS.pop(capability_id, None)


def toolset_builder(capability_id: str) -> ToolsetBuilder | None:
    return _BUILDERS.get(capability_id)


def is_built(capability_id: str) -> bool:
    return capability_id in _BUILDERS
