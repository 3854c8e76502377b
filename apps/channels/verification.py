"""Checking that an inbound webhook came from the platform, before anything else reads it.

- **Slack** signs every request with the app's signing secret: ``X-Slack-Signature:
  v0=<hex HMAC-SHA256 of "v0:<X-Slack-Request-Timestamp>:<raw body>">``. A timestamp more than
  five minutes from the server's clock is a replay, refused even when the signature matches.
- **Telegram** sends back the ``secret_token`` given to ``setWebhook`` in
  ``X-Telegram-Bot-Api-Secret-Token``.
- **Mattermost** puts the outgoing webhook's token in the payload (``token``): it does not sign
  bodies, so the token is the whole check.

Every comparison is constant time (``agenticos.signatures``). A binding with no verification
secret refuses every call rather than trusting it. Every refusal is the same 403 to the caller;
the reason goes to the log only.
"""

from __future__ import annotations

import json
import time
from urllib.parse import parse_qs

from agenticos.signatures import hmac_sha256_hex, same_secret, within_window

SLACK_TOLERANCE_SECONDS = 5 * 60
SLACK_SIGNATURE = "HTTP_X_SLACK_SIGNATURE"
SLACK_TIMESTAMP = "HTTP_X_SLACK_REQUEST_TIMESTAMP"
TELEGRAM_SECRET = "HTTP_X_TELEGRAM_BOT_API_SECRET_TOKEN"


class NotFromPlatform(Exception):
    """The request does not prove it came from the platform; ``reason`` is for the log."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


def slack_signature(secret: str, body: bytes, timestamp: int | str) -> str:
    """Slack's ``v0=`` signature of ``body`` sent at ``timestamp`` (tests sign with it too)."""
    return "v0=" + hmac_sha256_hex(secret, b"v0:" + str(timestamp).encode() + b":" + body)


def verify_slack(secret: str | None, body: bytes, meta, *, now: float | None = None) -> None:
    if not secret:
        raise NotFromPlatform("the binding has no signing secret")
    raw_timestamp = (meta.get(SLACK_TIMESTAMP) or "").strip()
    signature = meta.get(SLACK_SIGNATURE)
    if not raw_timestamp or not signature:
        raise NotFromPlatform("unsigned")
    try:
        sent = int(raw_timestamp)
    except ValueError:
        raise NotFromPlatform("X-Slack-Request-Timestamp is not unix seconds") from None
    now = time.time() if now is None else now
    if not within_window(sent, now=now, tolerance_seconds=SLACK_TOLERANCE_SECONDS):
        raise NotFromPlatform("stale timestamp")
    if not same_secret(slack_signature(secret, body, raw_timestamp), signature):
        raise NotFromPlatform("bad signature")


def verify_telegram(secret: str | None, meta) -> None:
    if not secret:
        raise NotFromPlatform("the binding has no secret token")
    if not same_secret(secret, meta.get(TELEGRAM_SECRET)):
        raise NotFromPlatform("bad secret token")


def mattermost_payload(body: bytes, content_type: str) -> dict:
    """An outgoing webhook's payload: JSON, or a form (Mattermost sends either)."""
    text = body.decode("utf-8", errors="replace")
    if content_type.startswith("application/json"):
        try:
            payload = json.loads(text or "{}")
        except ValueError:
            raise NotFromPlatform("the body is not JSON") from None
        if not isinstance(payload, dict):
            raise NotFromPlatform("the body is not a JSON object")
        return payload
    return {key: values[-1] for key, values in parse_qs(text).items()}


def verify_mattermost(secret: str | None, payload: dict) -> None:
    if not secret:
        raise NotFromPlatform("the binding has no webhook token")
    token = payload.get("token")
    if not isinstance(token, str) or not same_secret(secret, token):
        raise NotFromPlatform("bad token")
