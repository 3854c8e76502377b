"""The Builder's MCP servers section: which connections an agent binds, their renames, and the
warning that says when tool search would pay.

Every tool a bound server exposes is a schema the model pays for in every request, called or not.
Above :data:`TOOL_WARNING_THRESHOLD` tools (counted from each connection's fixed list), the section
warns with a rough token estimate and offers a button that binds tool search — it never binds it
by itself: deferring changes what the model sees, so the decision is the editor's.
"""

from __future__ import annotations

import json
from typing import Any

from .selectors import connections_visible_to

TOOL_WARNING_THRESHOLD = 30


def schema_tokens(tool: dict) -> int:
    """About one token per four characters of the schema the model is sent for ``tool``."""
    return len(json.dumps(tool, separators=(",", ":"))) // 4 + 1


def _bindings(spec: dict) -> dict[int, dict]:
    bound: dict[int, dict] = {}
    for entry in spec.get("mcp_connections") or []:
        entry = {"id": entry} if isinstance(entry, int) else entry
        if isinstance(entry, dict) and isinstance(entry.get("id"), int):
            bound[entry["id"]] = entry
    return bound


def tool_search_bound(spec: dict) -> bool:
    return any(
        isinstance(b, dict) and b.get("id") == "tool_search" and b.get("enabled", True)
        for b in spec.get("capabilities") or []
    )


def mcp_section(user, organization, spec: dict) -> dict[str, Any]:
    """The template context of the section, for the connections ``user`` may see."""
    bound = _bindings(spec)
    rows, tool_count, tokens = [], 0, 0
    for connection in connections_visible_to(user, organization):
        binding = bound.get(connection.pk)
        enabled = binding is not None and binding.get("enabled", True)
        overrides = (binding or {}).get("tool_overrides") or {}
        tools = [
            {
                "name": tool["name"],
                "description": tool.get("description", ""),
                "rename": (overrides.get(tool["name"]) or {}).get("name") or "",
                "visible": connection.prefixed(tool["name"]),
            }
            for tool in connection.tools or []
        ]
        if enabled:
            tool_count += len(tools)
            tokens += sum(
                schema_tokens(
                    {
                        "name": connection.prefixed(t["name"]),
                        "description": t.get("description", ""),
                        "parameters": t.get("input_schema", {}),
                    }
                )
                for t in connection.tools or []
            )
        rows.append({"connection": connection, "enabled": enabled, "tools": tools})
    searching = tool_search_bound(spec)
    return {
        "mcp_rows": rows,
        "mcp_tool_count": tool_count,
        "mcp_token_estimate": tokens,
        "mcp_tool_search_bound": searching,
        "mcp_warn": tool_count > TOOL_WARNING_THRESHOLD and not searching,
        "mcp_threshold": TOOL_WARNING_THRESHOLD,
    }


def parse_mcp_post(post, spec: dict, user, organization) -> list[dict]:
    """The spec's ``mcp_connections`` a Builder POST describes. Bindings of connections this
    editor cannot see (another member's personal one) are kept as they were."""
    current = list(spec.get("mcp_connections") or [])
    if not post.get("mcp.shown"):
        return current
    bound = _bindings(spec)
    visible = list(connections_visible_to(user, organization))
    visible_ids = {c.pk for c in visible}
    kept = [b for i, b in bound.items() if i not in visible_ids]
    for connection in visible:
        prefix = f"mcp.{connection.pk}"
        enabled = post.get(f"{prefix}.enabled") == "on"
        if not enabled and connection.pk not in bound:
            continue
        overrides = {}
        for tool in connection.tool_names:
            name = post.get(f"{prefix}.tool.{tool}.name", "").strip()
            if name:
                overrides[tool] = {"name": name}
        kept.append({"id": connection.pk, "enabled": enabled, "tool_overrides": overrides})
    return kept


def bind_tool_search(spec: dict) -> dict:
    """``spec`` with tool search bound and enabled (the warning's button)."""
    spec = dict(spec)
    bindings = [dict(b) for b in spec.get("capabilities") or []]
    for binding in bindings:
        if binding.get("id") == "tool_search":
            binding["enabled"] = True
            break
    else:
        bindings.append({"id": "tool_search", "enabled": True})
    spec["capabilities"] = bindings
    return spec
