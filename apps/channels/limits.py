"""Per-sender rate limits: how many messages one platform account may send one binding a minute.

A public surface is metered where a stranger can reach it (seed 003, "Lo que nada de esto
cubre": a channel bot measures each sender), not the deployment: there is no per-agent limit.
The count lives in Redis — shared by every web process and worker — in a fixed one-minute window
per (binding, sender); a sender over the limit is told how many seconds remain in the window.
"""

from __future__ import annotations

import hashlib
import time

import redis
from django.conf import settings

WINDOW_SECONDS = 60

_client: redis.Redis | None = None


def _redis() -> redis.Redis:
    global _client
    if _client is None:
        _client = redis.Redis.from_url(settings.REDIS_URL)
    return _client


def limit_of(binding) -> int:
    return binding.sender_limit_per_minute or settings.CHANNEL_SENDER_MESSAGES_PER_MINUTE


def _key(binding_id: int, account_key: str, window: int) -> str:
    prefix = getattr(settings, "THROTTLE_KEY_PREFIX", "agenticos")
    sender = hashlib.sha256(account_key.encode()).hexdigest()[:32]
    return f"{prefix}:channels:{binding_id}:{sender}:{window}"


def sender_admit(binding, account_key: str, *, now: float | None = None) -> int | None:
    """Count one message; None when admitted, else the seconds until the sender may try again."""
    now = time.time() if now is None else now
    window = int(now // WINDOW_SECONDS)
    key = _key(binding.pk, account_key, window)
    pipe = _redis().pipeline()
    pipe.incr(key)
    pipe.expire(key, WINDOW_SECONDS * 2)
    count, _ = pipe.execute()
    if int(count) <= limit_of(binding):
        return None
    return max(1, int((window + 1) * WINDOW_SECONDS - now + 0.999))
