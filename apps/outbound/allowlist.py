"""The operator's allow-list: internal destinations a URL an organization chose may reach.

A self-hosted model, an embedding server or a gateway on the company network lives at a
private address, which the outbound check refuses by default. The operator — the person who
runs the deployment, not an organization's admin — lists such a destination in
``OUTBOUND_ALLOW``, a comma-separated list of entries::

    OUTBOUND_ALLOW=gpu.internal:8000,10.0.0.5,10.0.8.0/24:443,[fd00::5],[fd00:1::/64]:8080

Each entry is ``HOST`` or ``HOST:PORT``:

- ``HOST`` is a DNS name (``gpu.internal``: that exact name, whatever it resolves to), an IPv4
  address or network (``10.0.0.5``, ``10.0.8.0/24``), or an IPv6 address or network in
  brackets (``[fd00::5]``, ``[fd00:1::/64]``): any URL whose host resolves into it.
- ``:PORT`` limits the entry to that port; without it every port of the host is allowed.

No wildcards (``*.internal``) and no network that holds every address (``0.0.0.0/0``): an
allow-list that allows everything is the check turned off, which is never what listing one
server means. A cloud metadata address stays refused even when an entry covers it.

This module only reads the syntax (no Django, no DNS), so the settings' system check and the
check itself share it. :func:`parse_entry` raises :class:`MalformedEntry`; :func:`parse`
skips what it cannot read (the system check ``agenticos.E010`` has said so at start), so a typo
allows nothing rather than something.
"""

from __future__ import annotations

import functools
import ipaddress
import re
from dataclasses import dataclass

# A DNS name as an operator writes one: labels of letters, digits and hyphens (and the
# underscore some internal zones use), dot-separated.
_NAME = re.compile(
    r"^(?=.{1,253}$)[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?(?:\.[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?)*$"
)


class MalformedEntry(ValueError):
    """An ``OUTBOUND_ALLOW`` entry this module cannot read; the message says why."""


Network = ipaddress.IPv4Network | ipaddress.IPv6Network


@dataclass(frozen=True)
class Entry:
    """One allow-list entry: a name or a network, and a port (None: every port)."""

    name: str | None = None
    network: Network | None = None
    port: int | None = None

    def admits(self, host: str, port: int, address: str) -> bool:
        """Whether a connection to ``host`` (as the URL names it) on ``port``, resolved to
        ``address``, is one this entry lists."""
        if self.port is not None and self.port != port:
            return False
        if self.name is not None:
            return host == self.name
        try:
            ip = ipaddress.ip_address(address.split("%", 1)[0])
        except ValueError:
            return False
        return (
            self.network is not None and ip.version == self.network.version and ip in self.network
        )


def _port(text: str, entry: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 65535:
        raise MalformedEntry(f"{entry!r}: the port must be a number from 1 to 65535")
    return int(text)


def _network(text: str, entry: str) -> Network | None:
    try:
        network = ipaddress.ip_network(text, strict=False)
    except ValueError:
        return None
    if network.prefixlen == 0:
        raise MalformedEntry(f"{entry!r} allows every address; list the servers themselves")
    return network


def parse_entry(entry: str) -> Entry:
    """One entry, or :class:`MalformedEntry` saying what is wrong with it."""
    text = entry.strip().lower()
    if not text:
        raise MalformedEntry("an empty entry")
    port: int | None = None
    if text.startswith("["):
        host, bracket, rest = text[1:].partition("]")
        if not bracket:
            raise MalformedEntry(f"{entry!r}: an IPv6 address needs its closing bracket")
        if rest:
            if not rest.startswith(":"):
                raise MalformedEntry(f"{entry!r}: only :PORT may follow the brackets")
            port = _port(rest[1:], entry)
        network = _network(host, entry)
        if network is None or network.version != 6:
            raise MalformedEntry(f"{entry!r}: brackets hold an IPv6 address or network")
        return Entry(network=network, port=port)
    if text.count(":") > 1:
        raise MalformedEntry(f"{entry!r}: write an IPv6 address in brackets, e.g. [fd00::5]:8000")
    host, colon, port_text = text.partition(":")
    if colon:
        port = _port(port_text, entry)
    host = host.rstrip(".")
    if "*" in host:
        raise MalformedEntry(f"{entry!r}: wildcards are not supported; list each host")
    network = _network(host, entry)
    if network is not None:
        return Entry(network=network, port=port)
    if "/" in host or not _NAME.match(host) or host.replace(".", "").isdigit():
        raise MalformedEntry(f"{entry!r} is neither a host name nor an IP address or network")
    return Entry(name=host, port=port)


@functools.lru_cache(maxsize=8)
def parse(entries: tuple[str, ...]) -> tuple[Entry, ...]:
    """Every readable entry of ``entries`` (a malformed one allows nothing)."""
    parsed = []
    for entry in entries:
        try:
            parsed.append(parse_entry(entry))
        except MalformedEntry:
            continue
    return tuple(parsed)


def problems(entries) -> list[str]:
    """What is wrong with each malformed entry of ``entries`` (the system check's list)."""
    found = []
    for entry in entries:
        try:
            parse_entry(str(entry))
        except MalformedEntry as exc:
            found.append(str(exc))
    return found
