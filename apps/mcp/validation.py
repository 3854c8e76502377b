"""Publish rules for a spec's ``mcp_connections`` (``apps.agents.validation`` calls these, at
publish and again when a frozen version assembles — so a connection deleted since, or one whose
tool was dropped from its list, refuses the run with the sentence that says what to change).

- the connection exists in this organization (another organization's id reads as missing);
- a personal connection is bound only by its owner, while they are a member: its token speaks
  as that member;
- its tools were listed at least once (an agent bound to an empty list would be offered nothing);
- a rename or re-description names a tool on the connection's list, with a name a model can call,
  and no two tools the model sees share a name.

Each error is ``(field, message)`` with ``field`` a path in the spec (``mcp_connections[0].id``).
"""

from __future__ import annotations

from apps.capabilities.registry import MODEL_CALLABLE_TOOL_NAME_RE

from .selectors import connections_by_id


def visible_names(binding, connection) -> dict[str, str]:
    """Server tool name → the name the model sees, for one binding of ``connection``."""
    names = {}
    for tool in connection.tool_names:
        override = binding.tool_overrides.get(tool)
        names[tool] = override.name if override and override.name else connection.prefixed(tool)
    return names


def mcp_binding_errors(
    spec, *, organization, actor, taken: dict[str, str]
) -> list[tuple[str, str]]:
    """``taken``: names the registry's tools already use (name → who), for the collision check."""
    errors: list[tuple[str, str]] = []
    bindings = list(spec.mcp_connections)
    if not bindings:
        return errors
    seen_ids: set[int] = set()
    for index, binding in enumerate(bindings):
        where = f"mcp_connections[{index}]"
        if binding.id in seen_ids:
            errors.append((f"{where}.id", f"connection {binding.id} is bound twice; keep one"))
        seen_ids.add(binding.id)
        for tool, override in binding.tool_overrides.items():
            if override.name is not None and not MODEL_CALLABLE_TOOL_NAME_RE.match(override.name):
                errors.append(
                    (
                        f"{where}.tool_overrides.{tool}.name",
                        f"{override.name!r} is a name no model could call: use 1–64 letters, "
                        "digits, _ or -, without spaces.",
                    )
                )
            if override.description is not None and not override.description.strip():
                errors.append(
                    (
                        f"{where}.tool_overrides.{tool}.description",
                        "an empty description tells the model nothing; write one or remove it",
                    )
                )
    if organization is None:
        return errors  # `agenticos spec validate` without --org: the rows are checked at publish

    rows = connections_by_id(organization.pk, {b.id for b in bindings})
    names = dict(taken)
    for index, binding in enumerate(bindings):
        where = f"mcp_connections[{index}]"
        connection = rows.get(binding.id)
        if connection is None:
            errors.append(
                (
                    f"{where}.id",
                    f"there is no MCP connection {binding.id} in this organization (it may have "
                    "been deleted); bind another or remove it",
                )
            )
            continue
        if not binding.enabled:
            continue
        if connection.owner_id is not None and getattr(actor, "pk", None) != connection.owner_id:
            errors.append(
                (
                    f"{where}.id",
                    f"“{connection.name}” is a personal connection of another member: its token "
                    "speaks as them, so only its owner may bind it",
                )
            )
            continue
        if connection.owner_id is not None and organization.role_of(actor) is None:
            # The owner left: their token must not keep speaking for the organization's agents.
            errors.append(
                (
                    f"{where}.id",
                    f"“{connection.name}” is the personal connection of someone who is no longer "
                    "a member; bind an organization connection instead",
                )
            )
            continue
        if connection.tools_listed_at is None:
            errors.append(
                (
                    f"{where}.id",
                    f"the tools of “{connection.name}” were never listed: list them under "
                    "Settings → Connections first",
                )
            )
            continue
        listed = set(connection.tool_names)
        for tool in binding.tool_overrides:
            if tool not in listed:
                errors.append(
                    (
                        f"{where}.tool_overrides.{tool}",
                        f"{tool!r} is not a tool of “{connection.name}” (its tools: "
                        f"{', '.join(sorted(listed)) or 'none'}); renames name the server's tool",
                    )
                )
        for tool, name in visible_names(binding, connection).items():
            owner = f"{connection.name}.{tool}"
            if tool not in binding.tool_overrides and not MODEL_CALLABLE_TOOL_NAME_RE.match(name):
                # A server may name a tool in a way no provider accepts (dots, 64+ characters).
                errors.append(
                    (
                        f"{where}.tool_overrides.{tool}.name",
                        f"{name!r} is a name no model could call: rename it for this agent "
                        "(1–64 letters, digits, _ or -)",
                    )
                )
                continue
            if name in names and names[name] != owner:
                field = (
                    f"{where}.tool_overrides.{tool}.name"
                    if tool in binding.tool_overrides
                    else f"{where}.id"
                )
                errors.append(
                    (
                        field,
                        f"the model would see two tools named {name!r} ({names[name]} and "
                        f"{owner}); rename one",
                    )
                )
            else:
                names[name] = owner
    return errors
