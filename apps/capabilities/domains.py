"""Host-name filters for ``web_fetch`` (``allowed_domains`` / ``blocked_domains``).

Seed 000 (Leer páginas web): the filters match the host name exactly — no wildcards, no implied
subdomains — so they answer "which sites may this agent read", not "can it reach our network"
(``safe_download`` is the security boundary). Hence:

- an entry that could never match is refused at publish: a wildcard, a scheme, a path, a port,
  or an empty allow list — each would leave a deny list that silently does not deny, or an
  allow list that silently denies everything;
- an empty deny list denies nothing, which is what leaving it unset means, so it reads as unset;
- an entry that can match is stored in the one spelling DNS would be asked for: lower-case,
  without the trailing root dot, IDNA-encoded. A name has more than one spelling, and an exact
  match against only one is a filter with a hole, so the filter is handed every equivalent
  spelling (:func:`host_spellings`) when it is built; the spec stores one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import idna

_LABEL_RE = re.compile(r"^[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?$")


def normalize_host(entry: str) -> str:
    """The stored spelling of a bare host name; ``ValueError`` saying why it could never match."""
    if not isinstance(entry, str):
        raise ValueError(f"{entry!r} is not a host name")
    raw = entry.strip()
    if not raw:
        raise ValueError("an empty host name can never match")
    if "*" in raw:
        raise ValueError(
            f"{entry!r}: wildcards never match — the filter compares the host name exactly, "
            "without implied subdomains; list each host"
        )
    if "://" in raw or re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:(?!\d+$)", raw):
        raise ValueError(f"{entry!r}: write the bare host name, without a scheme")
    if any(ch in raw for ch in "/?#"):
        raise ValueError(f"{entry!r}: write the bare host name, without a path")
    if "@" in raw:
        raise ValueError(f"{entry!r}: write the bare host name, without a user name")
    if ":" in raw or "[" in raw:
        raise ValueError(f"{entry!r}: write the bare host name, without a port")
    if any(ch.isspace() for ch in raw):
        raise ValueError(f"{entry!r}: a host name has no spaces")
    host = raw[:-1] if raw.endswith(".") else raw
    if not host or host.endswith(".") or ".." in host or host.startswith("."):
        raise ValueError(f"{entry!r} is not a valid host name")
    try:
        if host.isascii():
            host = host.lower()
            for label in host.split("."):
                if not _LABEL_RE.match(label):
                    raise ValueError(f"label {label!r}")
                if label.startswith("xn--"):
                    idna.decode(label)  # a punycode label must decode
        else:
            host = idna.encode(host, uts46=True).decode("ascii")
    except (idna.IDNAError, UnicodeError, ValueError) as exc:
        raise ValueError(f"{entry!r} is not a valid host name ({exc})") from None
    if len(host) > 253:
        raise ValueError(f"{entry!r} is longer than a host name can be")
    return host


def normalize_host_list(entries: Iterable[str]) -> list[str]:
    """Normalize every entry, dropping duplicates, keeping the author's order."""
    out: list[str] = []
    errors: list[str] = []
    for entry in entries:
        try:
            host = normalize_host(entry)
        except ValueError as exc:
            errors.append(str(exc))
            continue
        if host not in out:
            out.append(host)
    if errors:
        raise ValueError("; ".join(errors))
    return out


def host_spellings(host: str) -> tuple[str, ...]:
    """Every spelling that names the same host, for the filter to be handed at build time."""
    ascii_form = normalize_host(host)
    try:
        unicode_form = idna.decode(ascii_form)
    except idna.IDNAError:
        unicode_form = ascii_form
    forms = {ascii_form, unicode_form}
    forms |= {f + "." for f in forms}
    return tuple(sorted(forms))
