"""What a run's assembly reads of its bound MCP connections (``apps.runs.runner.assemble``).

Resolved before the run, like every capability's resources: the connection rows, the token out of
the vault, the fixed tool list and the binding's renames, as :class:`apps.mcp.client.ServerAccess`
values the toolsets are built from — the tools themselves never read the database.
"""

from __future__ import annotations

from .client import ServerAccess
from .selectors import connections_by_id
from .services import server_access


class ConnectionGone(Exception):
    def __init__(self, sentence: str) -> None:
        self.sentence = sentence
        super().__init__(sentence)


def accesses_for_run(organization_id: int, bindings) -> list[ServerAccess]:
    """One access per enabled binding, in spec order; ``ConnectionGone`` names a missing one."""
    rows = connections_by_id(organization_id, {b.id for b in bindings})
    accesses = []
    for binding in bindings:
        connection = rows.get(binding.id)
        if connection is None:
            raise ConnectionGone(
                f"The agent binds MCP connection {binding.id}, which no longer exists in this "
                "organization: republish the agent without it."
            )
        accesses.append(
            server_access(
                connection,
                renames={t: o.name for t, o in binding.tool_overrides.items() if o.name},
                descriptions={
                    t: o.description for t, o in binding.tool_overrides.items() if o.description
                },
            )
        )
    return accesses
