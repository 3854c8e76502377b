"""The project's ASGI application (HTTP + websockets) served by uvicorn in a thread of the test
process, against the test database — pytest-django's live_server is WSGI and cannot upgrade."""

from __future__ import annotations

import socket
import threading
import time

import pytest


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def asgi_server(transactional_db):
    import uvicorn

    port = free_port()
    config = uvicorn.Config(
        "agenticos.asgi:application",
        host="127.0.0.1",
        port=port,
        log_level="warning",
        lifespan="off",
        ws="websockets-sansio",
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="uvicorn-test", daemon=True)
    thread.start()
    deadline = time.monotonic() + 15
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.05)
    yield f"127.0.0.1:{port}"
    server.should_exit = True
    thread.join(10)
