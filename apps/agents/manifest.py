"""Which tools a run of a spec gets, after seed 004's ``tools ls``: the one answer for the CLI,
the Builder and the runner.

For every enabled binding, each tool the capability declares is either *offered* (with the name
and description the model sees, its resolved approval and whether it acts on the world) or
*withheld* with the reason. Approval is resolved by ``apps.capabilities.approval`` — the tool's
own override, else the binding's mode, else ``side_effecting`` for ``default`` — and always by
the stable tool id: a rename never removes a gate.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from apps.capabilities.approval import resolve_tool_approval_decision
from apps.capabilities.conditions import condition_json
from apps.capabilities.registry import all_capabilities, get_capability
from apps.capabilities.tool_view import RunFacts, run_facts_for, seen_tool, withheld_from_run

from .spec import AgentSpec, CapabilityBinding


@dataclass(frozen=True)
class ToolRow:
    capability: str
    tool_id: str
    name: str
    description: str
    approval: str  # "required" | "not required"
    approval_reason: str
    side_effecting: bool
    provider_executed: bool
    renamed: bool


@dataclass(frozen=True)
class WithheldTool:
    capability: str
    tool_id: str
    reason: str


@dataclass
class ToolManifest:
    tools: list[ToolRow]
    withheld: list[WithheldTool]
    disabled_capabilities: list[str]
    not_bound: list[str]

    def as_json(self) -> dict:
        return {
            "tools": [asdict(t) for t in self.tools],
            "withheld": [asdict(w) for w in self.withheld],
            "disabled_capabilities": self.disabled_capabilities,
            "not_bound": self.not_bound,
        }


def binding_tool_rows(
    binding: CapabilityBinding, facts: RunFacts | None = None
) -> tuple[list[ToolRow], list[WithheldTool]]:
    """One binding's tools as a run gets them (apps.capabilities.tool_view): the name and text
    the model reads, and — given ``facts``, what a run in the organization has to work on — the
    tools its configuration offers but no run would get (no collection, no skill file)."""
    cap = get_capability(binding.id)
    if not cap.available:
        reason = f"the {cap.name} capability is not available yet ({cap.unavailable_reason})"
        return [], [WithheldTool(cap.id, t.id, reason) for t in cap.tools]
    config = cap.parse_config(binding.config)
    offered = {t.id for t in cap.offered_tools(config)}
    rows: list[ToolRow] = []
    withheld: list[WithheldTool] = []
    for spec_tool in cap.tools:
        if spec_tool.id not in offered:
            condition = condition_json(spec_tool.offered_when) or {}
            withheld.append(
                WithheldTool(
                    cap.id,
                    spec_tool.id,
                    f"not offered with this configuration (offered when {condition.get('text', 'never')})",
                )
            )
            continue
        kept_from_runs = (
            withheld_from_run(cap.id, spec_tool.id, facts) if facts is not None else None
        )
        if kept_from_runs is not None:
            withheld.append(WithheldTool(cap.id, spec_tool.id, f"no run gets it: {kept_from_runs}"))
            continue
        decision = resolve_tool_approval_decision(
            cap, spec_tool.id, binding.approval, binding.tool_approval
        )
        seen = seen_tool(spec_tool, binding.tool_overrides)
        rows.append(
            ToolRow(
                capability=cap.id,
                tool_id=spec_tool.id,
                name=seen.name,
                description=seen.description,
                approval="required" if decision.required else "not required",
                approval_reason=decision.sentence,
                side_effecting=spec_tool.side_effecting,
                provider_executed=spec_tool.is_provider_executed(config),
                renamed=seen.renamed,
            )
        )
    return rows, withheld


def tool_manifest(spec: AgentSpec | dict, *, organization_id: int | None = None) -> ToolManifest:
    """Every tool a run of ``spec`` gets, and what is withheld or disabled. Assumes a valid spec.

    With ``organization_id``, what a run in that organization would get: the bound MCP
    connections' tools too (their lists live on the connections, apps.mcp), and no tool whose
    material is missing there (``tool_view.run_facts_for``). Without it, what the configuration
    offers (publish-time questions: gating and renames are checked on every declared tool)."""
    if not isinstance(spec, AgentSpec):
        spec = AgentSpec.model_validate(spec)
    tools: list[ToolRow] = []
    withheld: list[WithheldTool] = []
    disabled: list[str] = []
    bound = {b.id for b in spec.capabilities}
    facts = run_facts_for(organization_id, spec) if organization_id is not None else None
    for binding in spec.capabilities:
        if not binding.enabled:
            disabled.append(binding.id)
            continue
        rows, held = binding_tool_rows(binding, facts)
        tools.extend(rows)
        withheld.extend(held)
    if organization_id is not None and spec.mcp_connections:
        from apps.mcp.manifest import mcp_tool_rows

        tools.extend(ToolRow(**row) for row in mcp_tool_rows(spec, organization_id))
    not_bound = [c.id for c in all_capabilities() if c.id not in bound]
    return ToolManifest(tools, withheld, disabled, not_bound)


def offered_tool_names(spec: AgentSpec | dict) -> dict[str, str]:
    """Model-visible name → stable tool id, for every tool a run offers the model."""
    return {row.name: row.tool_id for row in tool_manifest(spec).tools}


def approval_required(spec: AgentSpec | dict, tool_id: str) -> bool:
    """The gate's question for one call, by stable tool id (never by the visible name)."""
    if not isinstance(spec, AgentSpec):
        spec = AgentSpec.model_validate(spec)
    for binding in spec.enabled_bindings():
        cap = get_capability(binding.id)
        if tool_id in cap.tool_ids:
            return resolve_tool_approval_decision(
                cap, tool_id, binding.approval, binding.tool_approval
            ).required
    raise KeyError(f"no enabled capability of this agent declares a tool {tool_id!r}")
