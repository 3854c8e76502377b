"""Verifying an event trigger's webhook: HMAC-SHA256 with the trigger's own secret.

Two spellings are accepted, each in exactly one header form, ``sha256=<64 lowercase hex>``:

- ``X-AgenticOS-Signature`` over ``<timestamp>.<raw body>`` with ``X-AgenticOS-Timestamp: <unix
  seconds>``. The timestamp is inside the signature, so it cannot be moved; one more than
  TRIGGER_EVENT_TOLERANCE_SECONDS from the server's clock is stale.
- GitHub's ``X-Hub-Signature-256`` over the raw body alone. GitHub signs no timestamp and no
  delivery id, so neither can be part of the replay key: ``X-GitHub-Delivery`` is a header anyone
  replaying a captured request can change or drop.

The replay key is what the signature covers, and nothing else: the digest of the verified
signature itself (the HMAC is a function of the secret and of the signed bytes, so the same
signed bytes always give the same key, however the unsigned headers around them are dressed).
It is stored on the fire row, unique per trigger (``trigger_fire_delivery_unique``): a GitHub
event is accepted once for as long as the trigger's history keeps it, an AgenticOS one once — and
outside its window it is stale anyway.

Why one header form: every extra spelling the server tolerated (no prefix, upper-case hex,
spaces) was one more distinct string over the same signed bytes, and the replay key used to be
derived from the string. Now a header that is not exactly ``sha256=`` and 64 lower-case hex digits
is refused before any HMAC is computed, and the key is derived from the canonical value.

Signatures are compared with ``hmac.compare_digest`` (constant time). Every refusal is a
``SignatureRefused`` with a reason for the log; the HTTP answer is the same 403 for all of them,
so a caller learns nothing about which part failed. A replay of a signature that verifies is
refused later, by the fire (``services.EventReplayed``).
"""

from __future__ import annotations

import hashlib
import re
import time
from dataclasses import dataclass

from django.conf import settings

from agenticos.signatures import hmac_sha256_hex, same_secret, within_window

AGENTICOS_SIGNATURE = "HTTP_X_AGENTICOS_SIGNATURE"
AGENTICOS_TIMESTAMP = "HTTP_X_AGENTICOS_TIMESTAMP"
GITHUB_SIGNATURE = "HTTP_X_HUB_SIGNATURE_256"

# The one header form accepted: what both GitHub and `sign` below produce.
SIGNATURE_FORM = re.compile(r"sha256=[0-9a-f]{64}")
TIMESTAMP_FORM = re.compile(r"[0-9]{1,12}")


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


def _well_formed(header: str, given: str) -> str:
    if SIGNATURE_FORM.fullmatch(given) is None:
        raise SignatureRefused(f"{header} is not sha256=<64 lower-case hex digits>")
    return given


def _fresh_timestamp(raw: str | None, *, now: float) -> str:
    if raw is None or raw == "":
        raise SignatureRefused("missing X-AgenticOS-Timestamp")
    # Digits only: int() would also take "+1", " 1" and "1_0", each a different signed string.
    if TIMESTAMP_FORM.fullmatch(raw) is None:
        raise SignatureRefused("X-AgenticOS-Timestamp is not unix seconds")
    if not within_window(
        int(raw), now=now, tolerance_seconds=settings.TRIGGER_EVENT_TOLERANCE_SECONDS
    ):
        raise SignatureRefused("stale timestamp")
    return raw


def replay_key(form: str, signature: str) -> str:
    """The key a verified signature is remembered by: the digest of its canonical value."""
    return f"{form}:" + hashlib.sha256(signature.encode("ascii")).hexdigest()


def verify(secret: str, body: bytes, meta, *, now: float | None = None) -> VerifiedEvent:
    """Check a request's signature headers (``request.META``) against ``secret``."""
    now = time.time() if now is None else now
    ours = meta.get(AGENTICOS_SIGNATURE)
    github = meta.get(GITHUB_SIGNATURE)
    if ours is not None:
        given = _well_formed("X-AgenticOS-Signature", ours)
        timestamp = _fresh_timestamp(meta.get(AGENTICOS_TIMESTAMP), now=now)
        if not same_secret(sign(secret, body, timestamp), given):
            raise SignatureRefused("bad signature")
        return VerifiedEvent(delivery_id=replay_key("aos", given))
    if github is not None:
        given = _well_formed("X-Hub-Signature-256", github)
        if not same_secret(sign_github(secret, body), given):
            raise SignatureRefused("bad GitHub signature")
        return VerifiedEvent(delivery_id=replay_key("gh", given))
    raise SignatureRefused("unsigned")
