"""Real MCP servers for the tests, built with the ``mcp`` SDK and served by uvicorn on 127.0.0.1.

``serve(server)`` starts one in a thread and yields its base URL; streamable HTTP lives at
``/mcp`` and SSE at ``/sse`` of the same process. A server may demand a bearer token: a request
without it is answered 401, and every Authorization header seen is kept in ``seen_tokens``.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import time

import uvicorn
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from starlette.applications import Starlette

SLOW_SECONDS = 3.0


def warehouse_server() -> MCPServer:
    """A few tools: two plain ones, one slow, one that always fails."""
    server = MCPServer("warehouse")

    @server.tool(description="Add two integers and return the sum.")
    def add(a: int, b: int) -> int:
        return a + b

    @server.tool(description="Count the units of a product in stock.")
    def stock_count(sku: str) -> str:
        return f"{sku}: 42 units in stock"

    @server.tool(description="Takes its time before answering.")
    async def slow_report(seconds: float = SLOW_SECONDS) -> str:
        await asyncio.sleep(seconds)
        return "the slow report is ready"

    @server.tool(description="Always fails.")
    def explode() -> str:
        # A failure the server reports with its text (an unexpected crash reads only
        # "Error executing tool explode" to the client).
        raise ToolError("the warehouse is on fire")

    return server


def catalog_server(count: int = 100) -> MCPServer:
    """``count`` tools with dull names and one that does what the test will search for."""
    server = MCPServer("catalog")

    def dull_tool(n: int):
        def dull(value: str = "") -> str:
            return f"tool {n} saw {value}"

        return dull

    for n in range(count - 1):
        server.add_tool(
            dull_tool(n),
            name=f"widget_op_{n:03d}",
            description=f"Performs widget operation number {n}.",
        )

    def refund_invoice(invoice_id: str) -> str:
        return f"invoice {invoice_id} refunded"

    server.add_tool(
        refund_invoice,
        name="refund_invoice",
        description="Refund a customer's invoice by its id (billing, money back).",
    )
    return server


class TokenGate:
    """ASGI middleware: remembers every Authorization header; refuses a wrong one with 401."""

    def __init__(self, app, token: str | None) -> None:
        self.app = app
        self.token = token
        self.seen_tokens: list[str] = []

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http":
            headers = dict(scope.get("headers") or [])
            auth = headers.get(b"authorization", b"").decode()
            self.seen_tokens.append(auth)
            if self.token is not None and auth != f"Bearer {self.token}":
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [(b"content-type", b"text/plain")],
                    }
                )
                await send({"type": "http.response.body", "body": b"unauthorized"})
                return
        await self.app(scope, receive, send)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Served:
    def __init__(self, base_url: str, gate: TokenGate) -> None:
        self.base_url = base_url
        self.gate = gate

    @property
    def http_url(self) -> str:
        return f"{self.base_url}/mcp"

    @property
    def sse_url(self) -> str:
        return f"{self.base_url}/sse"


@contextlib.contextmanager
def serve(server: MCPServer, *, token: str | None = None):
    http_app = server.streamable_http_app()
    sse_app = server.sse_app()

    @contextlib.asynccontextmanager
    async def lifespan(app):
        async with http_app.router.lifespan_context(http_app):
            yield

    # One process answers both transports: /mcp (streamable HTTP), /sse and /messages/ (SSE).
    app = Starlette(routes=[*http_app.routes, *sse_app.routes], lifespan=lifespan)
    gate = TokenGate(app, token)
    port = _free_port()
    config = uvicorn.Config(gate, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    uv = uvicorn.Server(config)
    thread = threading.Thread(target=uv.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 15
    while not uv.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the test MCP server did not start")
        time.sleep(0.02)
    try:
        yield Served(f"http://127.0.0.1:{port}", gate)
    finally:
        uv.should_exit = True
        thread.join(timeout=10)
