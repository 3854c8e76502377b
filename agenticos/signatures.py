"""The HMAC checks every signed webhook shares (event triggers, Slack, Telegram, Mattermost).

Each caller builds its own platform's message and header spelling; what they share is here, so
the constant-time comparison and the clock window are written once.
"""

from __future__ import annotations

import hashlib
import hmac


def hmac_sha256_hex(secret: str, message: bytes) -> str:
    """The hex HMAC-SHA256 of ``message`` under ``secret``."""
    return hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()


def as_header_bytes(value: str) -> bytes:
    # Header values arrive as latin-1 text; anything outside it simply fails the comparison.
    return value.strip().encode("latin-1", errors="replace")


def same_secret(expected: str, given: str | None) -> bool:
    """``given`` equals ``expected``, compared in constant time (False for a missing value)."""
    if given is None or not expected:
        return False
    return hmac.compare_digest(as_header_bytes(expected), as_header_bytes(given))


def within_window(sent: float, *, now: float, tolerance_seconds: float) -> bool:
    """A signed timestamp no further than ``tolerance_seconds`` from the server's clock."""
    return abs(now - sent) <= tolerance_seconds
