"""Talking to an MCP server: pydantic-ai's MCP client (``MCPToolset``, over fastmcp), built from
plain data the caller resolved — a tool never reaches the database, and neither does this module.

- :func:`list_tools` connects once and reads the server's tool list (Settings → Connections'
  *Test* and *List tools*);
- :func:`connection_toolset` is what a run is offered for one bound connection: the server's
  tools, restricted to the list fixed on the connection, renamed to ``<prefix>_<tool>`` (or to the
  binding's rename), labelled with the connection in their metadata (the approval gate's row names
  it), and deferred behind tool search when the agent binds it.

The transport is chosen explicitly (streamable HTTP or SSE), never guessed from the URL, and goes
through the outbound check's pinned transport (:mod:`apps.outbound.clients`). Bearer tokens travel as an
``Authorization`` header and never appear in a sentence, a log line or an audit entry.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import anyio
from django.conf import settings
from pydantic_ai.exceptions import ApprovalRequired, CallDeferred, ModelRetry, ToolFailed
from pydantic_ai.toolsets import AbstractToolset, WrapperToolset

from apps.outbound.clients import fastmcp_client_factory, refusal_in

from .choices import Transport

logger = logging.getLogger(__name__)

# What the approval gate and the console read off an MCP tool's definition. Deliberately not the
# registry's tool-id key: an MCP tool named like a registry tool must never pick up that tool's
# approval rule.
MCP_CONNECTION_ID_METADATA = "agenticos_mcp_connection_id"
MCP_CONNECTION_NAME_METADATA = "agenticos_mcp_connection"
MCP_TOOL_METADATA = "agenticos_mcp_tool"


@dataclass(frozen=True)
class ServerAccess:
    """Everything needed to reach one connection's server, resolved before anyone dials it."""

    connection_id: int
    name: str
    url: str
    transport: str
    token: str | None = None
    prefix: str = ""
    # The tools fixed on the connection (the server's own names); None offers whatever it lists.
    tool_names: tuple[str, ...] | None = None
    # A binding's per-tool rename / re-description, keyed by the server's tool name.
    renames: Mapping[str, str] = field(default_factory=dict)
    descriptions: Mapping[str, str] = field(default_factory=dict)

    def __repr__(self) -> str:  # never the token
        return f"<ServerAccess {self.connection_id} {self.name!r} {self.url}>"

    def visible_name(self, tool_name: str) -> str:
        return self.renames.get(tool_name) or f"{self.prefix}_{tool_name}"


class McpUnreachable(Exception):
    """A bound connection's server could not be reached: the run does not start without its tools
    (they are never silently dropped). ``sentence`` names the connection."""

    def __init__(self, name: str, reason: str) -> None:
        self.name = name
        self.reason = reason
        self.sentence = (
            f"The MCP connection “{name}” could not be reached ({reason}), so the run did not "
            "start: its tools would have been missing. Check the connection under Settings → "
            "Connections."
        )[:480]
        super().__init__(self.sentence)

    @property
    def plain(self) -> str:
        """The same failure outside a run (Settings → Connections' Test and List tools)."""
        return f"Could not reach “{self.name}”: {self.reason}"


def _leaf(exc: BaseException) -> BaseException:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


# Why a server was not reached, said once whatever the network answered: a refused connection, a
# time-out and a reset read the same, so the connection's Test is not a port scanner.
UNREACHABLE_REASON = "the server could not be reached"


def failure_reason(exc: BaseException) -> str:
    """A short, token-free reason for a person: the address rule, a refused token, or that the
    server could not be reached."""
    refused = refusal_in(exc)
    if refused is not None:
        return refused.sentence
    leaf = _leaf(exc)
    status = getattr(getattr(leaf, "response", None), "status_code", None)
    if status in (401, 403):
        return f"the server refused the token (HTTP {status})"
    if isinstance(status, int):
        return f"the server answered HTTP {status}"
    return UNREACHABLE_REASON


def server_toolset(access: ServerAccess):
    """pydantic-ai's client for ``access``: the transport the connection names, guarded."""
    from fastmcp.client.transports import SSETransport, StreamableHttpTransport
    from pydantic_ai.mcp import MCPToolset

    headers = {"Authorization": f"Bearer {access.token}"} if access.token else {}
    transport_class = SSETransport if access.transport == Transport.SSE else StreamableHttpTransport
    transport = transport_class(
        url=access.url, headers=headers, httpx_client_factory=fastmcp_client_factory
    )
    return MCPToolset(
        transport,
        id=f"mcp-{access.connection_id}",
        # A failing tool is a result the model reads and adapts to, not a retry loop.
        tool_error_behavior="failed",
        init_timeout=settings.MCP_CONNECT_TIMEOUT_SECONDS,
        # The per-call limit is ours (ConnectionGuard); the session only needs to outlive it.
        read_timeout=settings.MCP_TOOL_TIMEOUT_SECONDS + 30,
    )


@dataclass
class ConnectionGuard(WrapperToolset[Any]):
    """The server's toolset with the connection's failure rules around it.

    Connecting or listing fails loudly with :class:`McpUnreachable` (the run stops naming the
    connection); a call that outlives ``MCP_TOOL_TIMEOUT_SECONDS`` or loses the connection is a
    failed tool result the model reads, so one slow server never hangs a run.
    """

    access: ServerAccess = None  # type: ignore[assignment]

    async def __aenter__(self):
        try:
            await self.wrapped.__aenter__()
        except Exception as exc:
            raise McpUnreachable(self.access.name, failure_reason(exc)) from exc
        return self

    async def get_tools(self, ctx):
        try:
            return await self.wrapped.get_tools(ctx)
        except Exception as exc:
            raise McpUnreachable(self.access.name, failure_reason(exc)) from exc

    async def call_tool(self, name, tool_args, ctx, tool):
        seconds = settings.MCP_TOOL_TIMEOUT_SECONDS
        visible = self.access.visible_name(name)
        try:
            with anyio.fail_after(seconds):
                return await self.wrapped.call_tool(name, tool_args, ctx, tool)
        except TimeoutError:
            raise ToolFailed(
                f"{visible} (MCP connection “{self.access.name}”) did not answer within "
                f"{seconds} seconds; the call was abandoned."
            ) from None
        except (ModelRetry, ToolFailed, ApprovalRequired, CallDeferred):
            raise
        except Exception as exc:
            logger.warning(
                "MCP connection %s: call of %s failed",
                self.access.connection_id,
                name,
                exc_info=True,
            )
            raise ToolFailed(
                f"{visible} (MCP connection “{self.access.name}”) failed: {failure_reason(exc)}"
            ) from None


def connection_toolset(access: ServerAccess, *, defer: bool = False) -> AbstractToolset[Any]:
    """One bound connection's tools as a run is offered them (see the module docstring)."""
    guarded = ConnectionGuard(wrapped=server_toolset(access), access=access)
    fixed = None if access.tool_names is None else frozenset(access.tool_names)
    toolset: AbstractToolset[Any] = guarded
    if fixed is not None:
        toolset = toolset.filtered(lambda ctx, tool_def: tool_def.name in fixed)

    async def label(ctx, tool_defs):
        return [
            replace(
                tool_def,
                description=access.descriptions.get(tool_def.name, tool_def.description),
                metadata={
                    **(tool_def.metadata or {}),
                    MCP_CONNECTION_ID_METADATA: access.connection_id,
                    MCP_CONNECTION_NAME_METADATA: access.name,
                    MCP_TOOL_METADATA: tool_def.name,
                },
            )
            for tool_def in tool_defs
        ]

    toolset = toolset.prepared(label).prefixed(access.prefix)
    renames = {new: f"{access.prefix}_{old}" for old, new in access.renames.items() if new}
    if renames:
        toolset = toolset.renamed(renames)
    if defer:
        # Hidden until tool search finds it; a discovered tool keeps the name given above, so the
        # approval gate and the binding's rename still reach it.
        toolset = toolset.defer_loading()
    return toolset


async def _list(access: ServerAccess) -> list[dict]:
    # Listed through pydantic-ai's MCP client itself: the guard only wraps it (its declared type
    # is any toolset, which has no list_tools).
    toolset = server_toolset(access)
    server = ConnectionGuard(wrapped=toolset, access=access)
    async with server:
        tools = await toolset.list_tools()
    listed = []
    for tool in tools:
        data = tool.model_dump(by_alias=True, exclude_none=True)
        listed.append(
            {
                "name": data["name"],
                "description": (data.get("description") or "")[:2000],
                "input_schema": data.get("inputSchema") or {"type": "object"},
            }
        )
    return sorted(listed, key=lambda t: t["name"])


def list_tools(access: ServerAccess) -> list[dict]:
    """The server's tools, ``[{"name", "description", "input_schema"}]``; ``McpUnreachable`` when
    it cannot be reached. Blocking: call it outside a transaction."""
    from asgiref.sync import async_to_sync

    try:
        return async_to_sync(_list)(access)
    except McpUnreachable:
        raise
    except Exception as exc:
        raise McpUnreachable(access.name, failure_reason(exc)) from exc
