"""The MCP tests' cast: real MCP servers on 127.0.0.1 (tests/mcp/servers.py) and connections to
them. 127.0.0.1 is loopback, which the address checks refuse unless an operator lists the host:
the ``mcp_allowed`` fixture lists it, as an operator running an internal server would."""

from __future__ import annotations

import pytest

from apps.mcp.services import connection_create, connection_list_tools

from .servers import catalog_server, serve, warehouse_server

TOKEN = "mcp-secret-token-0123456789"


@pytest.fixture(scope="module")
def warehouse():
    with serve(warehouse_server(), token=TOKEN) as served:
        yield served


@pytest.fixture(scope="module")
def catalog():
    with serve(catalog_server(100)) as served:
        yield served


@pytest.fixture
def mcp_allowed(settings):
    settings.OUTBOUND_ALLOW = ["127.0.0.1"]
    settings.MCP_TOOL_TIMEOUT_SECONDS = 2


@pytest.fixture
def listed_connection(mcp_allowed):
    """A connection created and listed by ``actor``: the way Settings → Connections adds one."""

    def make(actor, organization, url, *, name="Warehouse", token=TOKEN, **fields):
        connection = connection_create(
            actor=actor, organization=organization, name=name, url=url, token=token, **fields
        )
        return connection_list_tools(actor=actor, connection=connection)

    return make
