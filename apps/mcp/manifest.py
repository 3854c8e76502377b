"""The MCP half of the tool manifest (``agenticos tools ls``, ``GET agents/{id}/tools/``): each
enabled binding's tools as a run offers them — the connection's fixed list, prefixed or renamed.

Approval is never required by the spec for them (it is the connection's matter; only a chat that
asks about everything holds them), and what they do to the world is unknown here, so they are
listed as acting on it.
"""

from __future__ import annotations

from .selectors import connections_by_id
from .validation import visible_names

APPROVAL_REASON = (
    "Runs without asking (an MCP tool is outside the approval gate; a chat set to Ask about "
    "everything still asks)."
)


def mcp_tool_rows(spec, organization_id: int) -> list[dict]:
    bindings = spec.enabled_mcp_connections()
    rows = connections_by_id(organization_id, {b.id for b in bindings})
    out = []
    for binding in bindings:
        connection = rows.get(binding.id)
        if connection is None:
            continue  # the publish rules say so; the manifest lists what a run would get
        names = visible_names(binding, connection)
        for tool in connection.tools or []:
            override = binding.tool_overrides.get(tool["name"])
            out.append(
                {
                    "capability": f"mcp:{connection.pk}",
                    "tool_id": tool["name"],
                    "name": names[tool["name"]],
                    "description": (
                        override.description
                        if override and override.description
                        else tool.get("description", "")
                    ),
                    "approval": "not required",
                    "approval_reason": APPROVAL_REASON,
                    "side_effecting": True,
                    "provider_executed": False,
                    "renamed": bool(override and override.name),
                }
            )
    return out
