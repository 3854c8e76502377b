"""Where a connection may point: the deployment's address checks for every MCP request.

A connection's URL is typed by a person and dialled from inside the deployment, by the web
process (test, list tools) and by workers (runs). So it passes the same address rules as
web_fetch — pydantic-ai's SSRF checks (``pydantic_ai/_ssrf.py``): no private, loopback or
link-local address, and never a cloud metadata address — with one difference: the operator may
allow-list hosts in ``MCP_ALLOWED_HOSTS`` (an internal MCP server is a normal thing to run), which
lifts the private/loopback rule for exactly those hosts. A metadata address stays refused even
for an allow-listed host: no MCP server lives there.

The URL is checked when it is saved (a 422 naming ``url``), and again on every request the client
makes: :class:`GuardedTransport` resolves the host once, judges every address it resolved to, and
pins the connection to the first of them, so a name that answered public when it was saved (or a
redirect) cannot lead to 169.254.169.254 later.
"""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlsplit

import httpx2
from django.conf import settings
from pydantic_ai._ssrf import is_cloud_metadata_ip, is_private_ip


class AddressRefused(Exception):
    """The URL may not be dialled from this deployment; ``sentence`` says why, for a person."""

    def __init__(self, sentence: str) -> None:
        self.sentence = sentence
        super().__init__(sentence)


def allowed_hosts() -> frozenset[str]:
    return frozenset(h.strip().lower().rstrip(".") for h in settings.MCP_ALLOWED_HOSTS if h.strip())


def _host_of(url: str) -> str:
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018  (a port outside 0–65535 raises here)
    except ValueError:
        raise AddressRefused("The URL is not a valid http:// or https:// address.") from None
    if parts.scheme not in ("http", "https"):
        raise AddressRefused("The URL must start with http:// or https://.")
    host = (parts.hostname or "").rstrip(".")
    if not host:
        raise AddressRefused("The URL has no host.")
    return host


def _literal(host: str) -> str | None:
    try:
        return str(ipaddress.ip_address(host.strip("[]")))
    except ValueError:
        return None


def resolve(host: str) -> list[str]:
    literal = _literal(host)
    if literal is not None:
        return [literal]
    try:
        infos = socket.getaddrinfo(host, None, socket.AF_UNSPEC, socket.SOCK_STREAM)
    except (OSError, UnicodeError, ValueError) as exc:
        raise AddressRefused(f"The host {host} does not resolve ({exc}).") from None
    seen: list[str] = []
    for info in infos:
        address = str(info[4][0])
        if address not in seen:
            seen.append(address)
    if not seen:
        raise AddressRefused(f"The host {host} does not resolve.")
    return seen


def judge(host: str, addresses: list[str]) -> None:
    """Refuse ``host`` when one of its addresses is off limits (see the module docstring)."""
    listed = host.lower() in allowed_hosts()
    for address in addresses:
        if is_cloud_metadata_ip(address):
            raise AddressRefused(
                f"{host} leads to a cloud metadata address ({address}), which this deployment "
                "never dials."
            )
        if is_private_ip(address) and not listed:
            raise AddressRefused(
                f"{host} leads to a private, loopback or link-local address ({address}), which "
                "this deployment does not dial unless an operator lists the host in "
                "MCP_ALLOWED_HOSTS."
            )


def check_url(url: str) -> list[str]:
    """The addresses ``url``'s host resolves to, or ``AddressRefused``. Blocking (DNS)."""
    host = _host_of(url)
    addresses = resolve(host)
    judge(host, addresses)
    return addresses


class GuardedTransport(httpx2.AsyncBaseTransport):
    """An httpx transport that checks and pins every request's address before it is sent."""

    def __init__(self) -> None:
        self._inner = httpx2.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        import anyio.to_thread

        host = request.url.host
        addresses = await anyio.to_thread.run_sync(resolve, host)
        judge(host, addresses)
        if _literal(host) is None:
            # Pinned: the request goes to the address just judged, under its own Host header and,
            # for TLS, its own name for SNI and the certificate. A copy is sent, so the client's
            # request (which a redirect is resolved against) keeps the host's name.
            extensions = dict(request.extensions)
            if request.url.scheme == "https":
                extensions["sni_hostname"] = host
            request = httpx2.Request(
                request.method,
                request.url.copy_with(host=addresses[0]),
                headers=request.headers,
                stream=request.stream,
                extensions=extensions,
            )
        return await self._inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self._inner.aclose()


def guarded_client_factory(
    headers: dict[str, str] | None = None,
    timeout: httpx2.Timeout | None = None,
    auth: httpx2.Auth | None = None,
    **kwargs,
) -> httpx2.AsyncClient:
    """fastmcp's ``httpx_client_factory``: its usual client, over :class:`GuardedTransport`."""
    return httpx2.AsyncClient(
        headers=headers,
        timeout=timeout if timeout is not None else httpx2.Timeout(30.0, read=300.0),
        auth=auth,
        follow_redirects=kwargs.get("follow_redirects", True),
        transport=GuardedTransport(),
    )
