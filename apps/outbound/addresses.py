"""The outbound check: may this deployment dial this URL? (See the package docstring for why.)

:func:`check_url` is the whole rule, in order:

1. the URL parses as ``http://`` or ``https://`` with a host and a valid port (``http://[x]/``
   is a refusal with a sentence, not a ``ValueError``);
2. its host resolves (an address written as one — ``10.0.0.1``, ``[::1]``, and the forms the C
   library reads as numbers: ``2130706433``, ``0x7f.1``, ``0177.0.0.1`` — is its own answer);
3. *every* address it resolves to is judged, not only the first: a cloud metadata address is
   never dialled; a private, loopback, link-local, unspecified (``0.0.0.0``, ``[::]``),
   shared (100.64/10), multicast or reserved address — or an IPv6 address carrying one of those
   (IPv4-mapped, NAT64, 6to4…) — only when the operator's ``OUTBOUND_ALLOW`` lists it;
4. no user name or password in the URL (it would be stored, shown and audited in the clear);
5. where a credential travels (``https_unless_listed``), plain ``http://`` only to a listed
   destination.

Which addresses count as private or metadata is pydantic-ai's table (``pydantic_ai/_ssrf.py``,
the one its ``web_fetch`` download uses): one table for the model's fetches and for everything an
organization typed.

The check runs twice for a saved URL: when it is saved (a 422 naming the field) and when it is
dialled (:mod:`.clients`), because what a name resolves to can change in between.
"""

from __future__ import annotations

import ipaddress
import logging
import socket
from dataclasses import dataclass
from urllib.parse import urlsplit

from django.conf import settings
from pydantic_ai._ssrf import is_cloud_metadata_ip, is_private_ip

from . import allowlist

logger = logging.getLogger(__name__)

# The allow-list of a URL nobody in the organization chose — one the model asked for
# (web_fetch): it never reaches an internal server, listed or not, because a page the model read
# can tell it which URL to ask for next.
NOBODY: tuple[allowlist.Entry, ...] = ()

DEFAULT_PORTS = {"http": 80, "https": 443}


class Refused(Exception):
    """The URL may not be dialled. ``sentence`` says why, for the person who typed it, as a clause
    with its subject ("the URL must …", "gpu.internal leads to …"); it names the rule, never what
    a closed or open port answered; ``kind`` is one of ``malformed``,
    ``scheme``, ``unresolvable``, ``metadata``, ``private``, ``credentials``, ``plain_http``;
    ``address`` is the address judged, when there was one."""

    def __init__(self, kind: str, sentence: str, *, host: str = "", address: str = "") -> None:
        self.kind = kind
        self.sentence = sentence
        self.host = host
        self.address = address
        super().__init__(sentence)


@dataclass(frozen=True)
class Target:
    """A URL as the check read it."""

    url: str
    scheme: str
    host: str  # lower case, no trailing dot, no brackets
    port: int
    has_credentials: bool = False

    @property
    def is_literal(self) -> bool:
        return literal_address(self.host) is not None


@dataclass(frozen=True)
class Checked:
    """A URL that passed: where it goes, and the addresses judged (the first is dialled)."""

    target: Target
    addresses: tuple[str, ...]


def parse(url: str) -> Target:
    """``url`` read as an http(s) URL, or :class:`Refused` (``malformed``, ``scheme``)."""
    text = (url or "").strip() if isinstance(url, str) else ""
    try:
        parts = urlsplit(text)
        port = parts.port  # a port outside 0–65535, or not a number, raises here
        hostname = parts.hostname
    except ValueError:
        raise Refused("malformed", "the URL is not a valid http:// or https:// address") from None
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS:
        raise Refused("scheme", "the URL must start with http:// or https://")
    host = (hostname or "").rstrip(".").lower()
    if not host or any(ch.isspace() for ch in text):
        raise Refused(
            "malformed", "the URL is not a valid http:// or https:// address (it names no host)"
        )
    return Target(
        url=text,
        scheme=scheme,
        host=host,
        port=port or DEFAULT_PORTS[scheme],
        has_credentials=parts.username is not None or parts.password is not None,
    )


def literal_address(host: str) -> str | None:
    """The address ``host`` is written as, or None for a name. Besides the usual spellings this
    reads what the C library's ``inet_aton`` reads (``2130706433``, ``0x7f.1``, ``0177.0.0.1``,
    ``127.1``): an HTTP client hands those to the resolver, which answers them without DNS."""
    bare = host.strip("[]")
    try:
        return str(ipaddress.ip_address(bare.split("%", 1)[0]))
    except ValueError:
        pass
    if bare and all(ch in "0123456789abcdefx." for ch in bare) and bare[0].isdigit():
        try:
            return socket.inet_ntoa(socket.inet_aton(bare))
        except OSError:
            return None
    return None


def resolve(host: str) -> tuple[str, ...]:
    """Every address ``host`` resolves to, in the resolver's order, or :class:`Refused`.
    Blocking (DNS): an event loop calls it on a thread."""
    literal = literal_address(host)
    if literal is not None:
        return (literal,)
    try:
        infos = socket.getaddrinfo(host, None, socket.AF_UNSPEC, socket.SOCK_STREAM)
    except (OSError, UnicodeError, ValueError):
        raise Refused("unresolvable", f"the host {host} does not resolve", host=host) from None
    seen: list[str] = []
    for info in infos:
        address = str(info[4][0])
        if address not in seen:
            seen.append(address)
    if not seen:
        raise Refused("unresolvable", f"the host {host} does not resolve", host=host)
    return tuple(seen)


def operator_allow_list() -> tuple[allowlist.Entry, ...]:
    """``OUTBOUND_ALLOW`` as entries (a malformed entry allows nothing: agenticos.E010)."""
    return allowlist.parse(tuple(str(entry) for entry in settings.OUTBOUND_ALLOW))


def is_listed(target: Target, address: str, allow: tuple[allowlist.Entry, ...]) -> bool:
    return any(entry.admits(target.host, target.port, address) for entry in allow)


def judge(
    target: Target,
    addresses: tuple[str, ...],
    allow: tuple[allowlist.Entry, ...],
    *,
    https_unless_listed: bool = False,
) -> None:
    """Refuse ``target`` when one of ``addresses`` is off limits (the module docstring's rules
    3–5); returns None when it may be dialled."""
    host = target.host
    for address in addresses:
        if is_cloud_metadata_ip(address):
            raise Refused(
                "metadata",
                f"{_shown(host)} leads to a cloud metadata address, which this deployment never "
                "dials",
                host=host,
                address=address,
            )
        if is_private_ip(address) and not is_listed(target, address, allow):
            raise Refused(
                "private",
                f"{_shown(host)} leads to a private, loopback or link-local address, which this "
                "deployment dials only when the operator lists it in OUTBOUND_ALLOW",
                host=host,
                address=address,
            )
    if target.has_credentials:
        raise Refused(
            "credentials",
            "the URL must not carry a user name or password (it would be stored and shown in the "
            "clear)",
            host=host,
        )
    if (
        https_unless_listed
        and target.scheme == "http"
        and not all(is_listed(target, address, allow) for address in addresses)
    ):
        raise Refused(
            "plain_http",
            "the URL must be https:// — a key travels with every request (plain http only to a "
            "destination the operator lists in OUTBOUND_ALLOW)",
            host=host,
        )


def _shown(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def check_url(
    url: str,
    *,
    allow: tuple[allowlist.Entry, ...] | None = None,
    https_unless_listed: bool = False,
) -> Checked:
    """``url`` checked (parse, resolve, judge), or :class:`Refused`. ``allow`` is the operator's
    allow-list unless given (``NOBODY`` for a URL the model chose). Blocking (DNS)."""
    target = parse(url)
    addresses = resolve(target.host)
    judge(
        target,
        addresses,
        operator_allow_list() if allow is None else allow,
        https_unless_listed=https_unless_listed,
    )
    return Checked(target, addresses)


def field_error(url: str, **options) -> str | None:
    """The sentence a form or a publish check shows under the URL's field, or None when it may
    be dialled — for a caller that turns refusals into its own validation errors."""
    try:
        check_url(url, **options)
    except Refused as refused:
        return refused.sentence
    return None
