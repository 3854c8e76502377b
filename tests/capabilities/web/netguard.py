"""A network for web tests in which nothing can leave 127.0.0.1, even when the code under test is wrong.

:class:`LoopbackOnlyNetwork` replaces, for one test, the two doors every Python connection goes
through:

- ``socket.getaddrinfo`` becomes a resolver the test controls. A name gets the answers the test
  gave it, in order (the last one repeats — which is how a rebinding name is written: first public,
  then private); a name it was given no answer for fails to resolve. A numeric address resolves as
  itself, without any lookup. Every name asked is recorded in ``lookups``.
- ``socket.socket.connect`` / ``connect_ex`` let a connection through only to 127.0.0.1 (and Unix
  sockets, which the database and Redis may use). A *public-looking* address the test declared with
  :meth:`serve` is translated to a fake listening on 127.0.0.1 — the only way a "public" site can
  exist offline — and recorded in ``connected``. Every other destination is refused before a packet
  leaves, and recorded in ``refused``: a defect in the SSRF guard shows up as a refused entry and a
  failing test, never as traffic.

The guard covers everything that opens a Python socket: httpx, httpx2 (pydantic-ai's
``safe_download``), requests, asyncio. A client written in another language (``ddgs``' Rust
``primp``) opens its own sockets; those tests point it at a fake on 127.0.0.1 by URL.
"""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass, field

LOOPBACK = "127.0.0.1"


def _is_numeric(host: str) -> bool:
    """An address written as digits — including the forms the C library's ``inet_aton`` reads
    (``2130706433``, ``0177.0.0.1``, ``0x7f.1``, ``127.1``), which a real resolver answers without
    asking DNS, exactly like this one does."""
    try:
        ipaddress.ip_address(host.strip("[]").split("%", 1)[0])
        return True
    except ValueError:
        pass
    if not host or any(ch not in "0123456789abcdefxABCDEFX." for ch in host):
        return False
    try:
        socket.inet_aton(host)
    except OSError:
        return False
    return True


def _name_key(host: str) -> str:
    host = host.rstrip(".").lower()
    try:
        return host.encode("idna").decode("ascii")
    except UnicodeError:
        return host


@dataclass
class LoopbackOnlyNetwork:
    answers: dict[str, list[list[str]]] = field(default_factory=dict)
    served: dict[str, int] = field(default_factory=dict)
    lookups: list[str] = field(default_factory=list)
    connected: list[tuple[str, int]] = field(default_factory=list)
    refused: list[tuple[str, int]] = field(default_factory=list)
    # Refusals a test provoked on purpose (the guard's own test); any other fails the test.
    expected_refusals: list[tuple[str, int]] = field(default_factory=list)

    # -- what the test declares ------------------------------------------------------------
    def answer(self, name: str, *answers: str | list[str]) -> None:
        """``name`` resolves to ``answers[0]`` first, then ``answers[1]``…; the last one repeats."""
        self.answers[_name_key(name)] = [[a] if isinstance(a, str) else list(a) for a in answers]

    def serve(self, public_ip: str, loopback_port: int) -> None:
        """Connections to ``public_ip`` (any port) reach the fake listening on 127.0.0.1:port."""
        self.served[public_ip] = loopback_port

    # -- the doors -------------------------------------------------------------------------
    def install(self, monkeypatch) -> LoopbackOnlyNetwork:
        real_getaddrinfo = socket.getaddrinfo
        real_connect = socket.socket.connect
        real_connect_ex = socket.socket.connect_ex

        def getaddrinfo(host, port, family=0, type=0, proto=0, flags=0):
            if host is None:
                return real_getaddrinfo(host, port, family, type, proto, flags)
            name = host.decode() if isinstance(host, bytes) else str(host)
            if _is_numeric(name):
                return real_getaddrinfo(
                    name, port, family, type, proto, flags | socket.AI_NUMERICHOST
                )
            if name == "localhost":
                return real_getaddrinfo(
                    LOOPBACK, port, family, type, proto, flags | socket.AI_NUMERICHOST
                )
            self.lookups.append(name)
            queue = self.answers.get(_name_key(name))
            if not queue:
                raise socket.gaierror(socket.EAI_NONAME, f"test resolver: no answer for {name}")
            ips = queue.pop(0) if len(queue) > 1 else queue[0]
            numeric_port = (
                int(port)
                if isinstance(port, int) or (isinstance(port, str) and port.isdigit())
                else 0
            )
            entries = []
            for ip in ips:
                fam = socket.AF_INET6 if ":" in ip else socket.AF_INET
                sockaddr = (
                    (ip, numeric_port, 0, 0) if fam == socket.AF_INET6 else (ip, numeric_port)
                )
                entries.append((fam, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", sockaddr))
            return entries

        def route(sock, address):
            if sock.family == socket.AF_UNIX:
                return address
            host, port = str(address[0]), int(address[1])
            if sock.family == socket.AF_INET and host == LOOPBACK:
                return address
            if sock.family == socket.AF_INET and host in self.served:
                self.connected.append((host, port))
                return (LOOPBACK, self.served[host])
            self.refused.append((host, port))
            raise ConnectionRefusedError(f"network guard: {host}:{port} is not on 127.0.0.1")

        def connect(sock, address):
            return real_connect(sock, route(sock, address))

        def connect_ex(sock, address):
            return real_connect_ex(sock, route(sock, address))

        monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
        monkeypatch.setattr(socket.socket, "connect", connect)
        monkeypatch.setattr(socket.socket, "connect_ex", connect_ex)
        return self
