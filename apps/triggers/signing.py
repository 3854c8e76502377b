"""Verifying an event trigger's webhook: HMAC-SHA256 with the trigger's own secret.

Two spellings are accepted:

- ``X-AgenticOS-Signature: sha256=<hex>`` (the prefix is optional) over ``<timestamp>.<raw body>``
  with ``X-AgenticOS-Timestamp: <unix seconds>``. The timestamp is inside the signature, so it
  cannot be moved; one more than TRIGGER_EVENT_TOLERANCE_SECONDS from the server's clock is
  stale. Within the window, the signature's digest is the replay key: sent twice, refused.
- GitHub's ``X-Hub-Signature-256: sha256=<hex>`` over the raw body alone. GitHub sends no
  timestamp, so its replay key is ``X-GitHub-Delivery`` (the delivery's GUID), else the
  signature's digest; a timestamp header, when present, is checked for staleness too.

Signatures are compared with ``hmac.compare_digest`` (constant time). Every refusal is a
``SignatureRefused`` with a reason for the log; the HTTP answer is the same 403 for all of them,
so a caller learns nothing about which part failed.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass

from django.conf import settings

from agenticos.signatures import as_header_bytes, hmac_sha256_hex, same_secret, within_window

AGENTICOS_SIGNATURE = "HTTP_X_AGENTICOS_SIGNATURE"
AGENTICOS_TIMESTAMP = "HTTP_X_AGENTICOS_TIMESTAMP"
GITHUB_SIGNATURE = "HTTP_X_HUB_SIGNATURE_256"
GITHUB_DELIVERY = "HTTP_X_GITHUB_DELIVERY"


class SignatureRefused(Exception):
    """The body is not signed with this trigger's secret, or the signature is stale."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


@dataclass(frozen=True)
class VerifiedEvent:
    # The replay key: unique per trigger (apps.triggers.models.TriggerFire.delivery_id).
    delivery_id: str


def sign(secret: str, body: bytes, timestamp: int | str) -> str:
    """The AgenticOS signature of ``body`` sent at ``timestamp``: ``sha256=<hex>``."""
    message = str(timestamp).encode() + b"." + body
    return "sha256=" + hmac_sha256_hex(secret, message)


def sign_github(secret: str, body: bytes) -> str:
    """GitHub's spelling: ``sha256=<hex HMAC-SHA256 of the body>``."""
    return "sha256=" + hmac_sha256_hex(secret, body)


def _same(expected: str, given: str) -> bool:
    given = given.strip()
    if not given.lower().startswith("sha256="):
        given = "sha256=" + given
    return same_secret(expected, "sha256=" + given[7:].lower())


def _check_fresh(raw: str | None, *, now: float, required: bool) -> None:
    if raw is None or raw.strip() == "":
        if required:
            raise SignatureRefused("missing X-AgenticOS-Timestamp")
        return
    try:
        sent = int(raw.strip())
    except ValueError:
        raise SignatureRefused("X-AgenticOS-Timestamp is not unix seconds") from None
    if not within_window(sent, now=now, tolerance_seconds=settings.TRIGGER_EVENT_TOLERANCE_SECONDS):
        raise SignatureRefused("stale timestamp")


def _digest(signature: str) -> str:
    return "sig:" + hashlib.sha256(as_header_bytes(signature.lower())).hexdigest()


def verify(secret: str, body: bytes, meta, *, now: float | None = None) -> VerifiedEvent:
    """Check a request's signature headers (``request.META``) against ``secret``."""
    now = time.time() if now is None else now
    ours = meta.get(AGENTICOS_SIGNATURE)
    github = meta.get(GITHUB_SIGNATURE)
    timestamp = meta.get(AGENTICOS_TIMESTAMP)
    if ours:
        _check_fresh(timestamp, now=now, required=True)
        if not _same(sign(secret, body, timestamp.strip()), ours):
            raise SignatureRefused("bad signature")
        return VerifiedEvent(delivery_id=_digest(ours))
    if github:
        _check_fresh(timestamp, now=now, required=False)
        if not _same(sign_github(secret, body), github):
            raise SignatureRefused("bad GitHub signature")
        delivery = (meta.get(GITHUB_DELIVERY) or "").strip()
        return VerifiedEvent(delivery_id=f"gh:{delivery}"[:128] if delivery else _digest(github))
    raise SignatureRefused("unsigned")
