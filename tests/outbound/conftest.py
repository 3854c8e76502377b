"""The outbound check's tests run on a network where nothing leaves 127.0.0.1.

Names resolve only through the test's resolver (``tests/capabilities/web/netguard.py``): a name
can answer a private address, or answer public first and private after (DNS rebinding), and a
"public" address the test serves is a fake on 127.0.0.1. The allow-list starts empty — the
suite's own settings list 127.0.0.1 for its fakes, which these tests must not inherit.
"""

from __future__ import annotations

import socket
import threading

import pytest

from tests.capabilities.web.fakes import FakeWeb
from tests.capabilities.web.netguard import LoopbackOnlyNetwork

# Public-looking addresses (outside every private, reserved and documentation range).
PUBLIC_IP = "93.184.215.14"
GATEWAY_IP = "151.101.1.69"


@pytest.fixture
def closed(settings):
    """No allow-list: what a deployment does before its operator lists anything."""
    settings.OUTBOUND_ALLOW = []
    return settings


@pytest.fixture
def site():
    with FakeWeb() as web:
        yield web


@pytest.fixture
def network(monkeypatch, site, closed):
    net = LoopbackOnlyNetwork().install(monkeypatch)
    net.answer("news.example", PUBLIC_IP)
    net.answer("metadata.google.internal", "169.254.169.254")
    net.answer("internal.example", "10.1.2.3")
    net.answer("loop.example", "127.0.0.1")
    net.answer("v6-metadata.example", "fd00:ec2::254")
    net.answer("split.example", [PUBLIC_IP, "192.168.0.10"])
    net.answer("gpu.internal", "10.0.0.9")
    net.serve(PUBLIC_IP, site.port)
    yield net
    unexpected = [r for r in net.refused if r not in net.expected_refusals]
    assert not unexpected, f"a connection tried to leave 127.0.0.1: {unexpected}"


class Listener:
    """A TCP listener on 127.0.0.1 that records every connection and every byte it receives:
    the place a vault key must never reach."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        self.received = b""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        self.sock.settimeout(0.2)
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except (TimeoutError, OSError):
                continue
            self.connections += 1
            conn.settimeout(1)
            try:
                self.received += conn.recv(65536)
            except OSError:
                pass
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(2)
        self.sock.close()


@pytest.fixture
def listener():
    made = Listener()
    yield made
    made.close()


def closed_port() -> int:
    """A port on 127.0.0.1 nothing listens on (bound, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
