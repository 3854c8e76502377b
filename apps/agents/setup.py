"""The "Your setup" section of every run's instructions.

Seed 000: whatever capabilities an agent ends up with, each run receives in its instructions,
under Your setup, which it has and which it does not — so it describes only what it can do and
says what would have to be switched on for the rest. The runner appends
``your_setup_section(spec)`` to the agent's instructions.
"""

from __future__ import annotations

from apps.capabilities.registry import CATEGORY_LABELS, Capability, all_capabilities

from .spec import AgentSpec
from .validation import SPEC_FORBIDDEN_CAPABILITIES

YOUR_SETUP_HEADING = "## Your setup"


def _first_sentence(text: str) -> str:
    text = " ".join(text.split())
    cut = text.find(". ")
    return text if cut < 0 else text[: cut + 1]


def _what_enables(cap: Capability) -> str:
    """In words: what a person would switch on or provide for this capability."""
    parts = [f"an editor of this agent enables {cap.name} in the Builder"]
    if cap.needs:
        parts.append(f"it needs: {_first_sentence(cap.needs).rstrip('.')}")
    if not cap.available:
        parts.append("it is not available in this deployment yet")
    return "; ".join(parts)


def your_setup_section(spec: AgentSpec | dict) -> str:
    """The section listing the capabilities this agent has, those switched on that this deployment
    has not built yet, and those it lacks, with what would enable them. Deterministic: the same
    spec always gives the same text."""
    if not isinstance(spec, AgentSpec):
        spec = AgentSpec.model_validate(spec)
    enabled = {b.id for b in spec.enabled_bindings()}
    has: list[Capability] = []
    not_built: list[Capability] = []
    lacks: list[Capability] = []
    for cap in all_capabilities():
        if cap.id in SPEC_FORBIDDEN_CAPABILITIES:
            continue  # granted per chat binding; the runner mentions it where a channel grants it
        if cap.id not in enabled:
            lacks.append(cap)
        elif cap.available:
            has.append(cap)
        else:
            # Switched on, but a run gets none of its tools: telling the model it has them is
            # how an agent comes to promise a web search it cannot make.
            not_built.append(cap)

    lines = [YOUR_SETUP_HEADING, ""]
    lines.append(
        "Describe only what you can do with the capabilities below. When a request needs one you "
        "lack, say which one and what would enable it instead of pretending."
    )
    lines.append("")
    lines.append("You have:")
    if has:
        for cap in has:
            tools = ", ".join(t.id for t in cap.tools) or "no tools — it shapes how you work"
            lines.append(
                f"- {cap.name} ({cap.id}): {_first_sentence(cap.description)} Tools: {tools}."
            )
    else:
        lines.append("- No capabilities: you can only answer from the conversation itself.")
    if not_built:
        lines.append("")
        lines.append("You cannot do yet (switched on for you, but not built in this deployment):")
        for cap in not_built:
            lines.append(
                f"- {cap.name} ({cap.id}): you have none of its tools — {cap.unavailable_reason}."
            )
    lines.append("")
    lines.append("You do not have:")
    if lacks:
        for cap in lacks:
            label = CATEGORY_LABELS.get(cap.category, cap.category)
            lines.append(f"- {cap.name} ({cap.id}, {label}): {_what_enables(cap)}.")
    else:
        lines.append("- Nothing: every capability of this deployment is enabled.")
    return "\n".join(lines)
