"""Which tool calls wait for a person: the one resolution rule.

Seed 003 (Aprobaciones), from most specific to least:

1. the tool's own override (``tool_approval[tool_id]``), if it has one;
2. the binding's approval mode (``approval``: ``required`` | ``never`` | ``default``);
3. for ``default``, what ``side_effecting`` decides.

``required`` works on any tool, not only those with external effects ("this only reads, but in
my organization someone approves it anyway" is a real decision). Gates are keyed by the stable
tool id, never by the name a binding's ``tool_overrides`` gives the model: keying by the visible
name would let a rename silently remove the gate.

Pure functions: the approvals app's gate and the Builder both call these.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .registry import Capability


class ApprovalMode(enum.StrEnum):
    DEFAULT = "default"
    REQUIRED = "required"
    NEVER = "never"


APPROVAL_MODES: tuple[str, ...] = tuple(m.value for m in ApprovalMode)


@dataclass(frozen=True)
class ToolApprovalDecision:
    """The resolved answer and where it came from, for the Builder to say in words."""

    tool_id: str
    required: bool
    # "tool" (the per-tool override), "binding" (the binding's mode) or "side_effects".
    source: str
    mode: ApprovalMode

    @property
    def sentence(self) -> str:
        # Seed 003: the Builder states the result in words instead of describing the rule.
        asks = "Asks a person before every call" if self.required else "Runs without asking"
        why = {
            "tool": "set on this tool",
            "binding": "set for every tool of this capability",
            "side_effects": (
                "it acts on the world" if self.required else "it does not act on the world"
            ),
        }[self.source]
        return f"{asks} ({why})."


def _mode(value: Any, *, where: str) -> ApprovalMode:
    try:
        return ApprovalMode(value)
    except ValueError:
        raise ValueError(
            f"{where}: {value!r} is not an approval mode (use one of {', '.join(APPROVAL_MODES)})"
        ) from None


def resolve_tool_approval_decision(
    capability: Capability,
    tool_id: str,
    binding_approval: str = "default",
    tool_approval: Mapping[str, str] | None = None,
) -> ToolApprovalDecision:
    """Resolve one tool's approval with the reason; ``KeyError`` for a tool id not declared."""
    spec = capability.tool(tool_id)  # by stable id; raises naming the capability's tools
    overrides = tool_approval or {}
    if tool_id in overrides:
        mode = _mode(overrides[tool_id], where=f"tool_approval[{tool_id!r}]")
        source = "tool"
    else:
        mode = _mode(binding_approval, where="approval")
        source = "binding"
    if mode is ApprovalMode.REQUIRED:
        return ToolApprovalDecision(tool_id, True, source, mode)
    if mode is ApprovalMode.NEVER:
        return ToolApprovalDecision(tool_id, False, source, mode)
    return ToolApprovalDecision(tool_id, spec.side_effecting, "side_effects", mode)


def resolve_tool_approval(
    capability: Capability,
    tool_id: str,
    binding_approval: str = "default",
    tool_approval: Mapping[str, str] | None = None,
) -> bool:
    """True when a call of ``tool_id`` must wait for a person.

    The tool's override, else the binding's mode, else ``side_effecting`` for ``default``.
    """
    return resolve_tool_approval_decision(
        capability, tool_id, binding_approval, tool_approval
    ).required


def unknown_tool_ids(capability: Capability, tool_ids: Mapping[str, Any] | list[str]) -> list[str]:
    """Keys of a binding's ``tool_approval`` / ``tool_overrides`` this capability never declares."""
    declared = set(capability.tool_ids)
    return [t for t in tool_ids if t not in declared]


def gated_provider_executed_tools(
    capability: Capability,
    config: Any = None,
    binding_approval: str = "default",
    tool_approval: Mapping[str, str] | None = None,
) -> list[str]:
    """Tool ids whose approval resolves to required while the provider executes them.

    Seeds 000/003: the gate wraps the tool's execution, the only place a call can be held, so a
    native search or fetch never reaches it. A binding asking for that is refused at publish
    (and again when a frozen version is assembled) instead of receiving a gate that never fires.
    """
    parsed = capability.parse_config(config)
    return [
        spec.id
        for spec in capability.tools
        if spec.is_provider_executed(parsed)
        and resolve_tool_approval(capability, spec.id, binding_approval, tool_approval)
    ]
