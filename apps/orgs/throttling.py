"""Rate limits on the API and on API-key guessing (docs/security.md has the defaults).

Every count lives in Redis, so every web process shares it:

* **Requests per caller**: an API key, or a signed-in person, gets ``API_RATE_LIMIT`` requests
  (default 600 a minute); an anonymous client ``API_ANON_RATE_LIMIT`` per address — and that
  count includes its 401s (see ``apps.orgs.api.exceptions``), so a client without credentials
  cannot hammer the API at the speed of its refusals. Over it, a 429 with ``Retry-After``. An
  empty setting turns the limit off.
* **Failed API keys per address**: DRF checks permissions and throttles only after
  authentication, so a client guessing keys would be answered 401 as fast as it could ask. After
  ``API_KEY_FAILURE_LIMIT`` unknown or revoked keys from one address within
  ``API_KEY_FAILURE_WINDOW_SECONDS``, every bearer request from that address is a 429 until the
  window passes — over HTTP and over websockets alike.

Why not DRF's ``SimpleRateThrottle``: it reads the history from the cache, appends, and writes it
back, so sixteen threads of one key each read the same history and 900 of 900 requests passed a
600-a-minute limit. Here each request is one atomic Redis script: a fixed window counter (INCR,
and the window's expiry set by the request that opened it). Exactly N requests of a window pass,
whatever the concurrency. A fixed window lets a caller spend N at the end of one window and N at
the start of the next (at most 2N in any stretch of one window's length) — a bound, cheaper and
exact under concurrency, preferred to a sliding log of every request.

The client's address is ``REMOTE_ADDR`` only. DRF's ``get_ident`` would read ``X-Forwarded-For``,
which any client can write; the server sets ``REMOTE_ADDR`` from that header only for the proxies
``FORWARDED_ALLOW_IPS`` names (docs/security.md, "Proxies").

Signing in to the console is django-axes' (settings ``AXES_*``); its lockouts are audited
(``auth.lockout``, see apps.orgs.services.login_lockout_record), and ``apps.orgs.lockout`` adds the
per-account ceiling.
"""

from __future__ import annotations

import math
import threading

import redis
from django.conf import settings
from django.core.cache import cache
from rest_framework.throttling import BaseThrottle

from .models import ApiKey

RATE_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}

# One round trip, atomic: count this request, open the window (its expiry) if it is the first,
# answer the count and the milliseconds the window has left.
_FIXED_WINDOW = """
local count = redis.call('INCR', KEYS[1])
local left = redis.call('PTTL', KEYS[1])
if left < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  left = tonumber(ARGV[1])
end
return {count, left}
"""

_client_lock = threading.Lock()
_script = None


def _window_script():
    global _script
    with _client_lock:
        if _script is None:
            _script = redis.Redis.from_url(settings.REDIS_URL).register_script(_FIXED_WINDOW)
        return _script


def parse_rate(rate: str | None) -> tuple[int, int] | None:
    """``"600/minute"`` → (600, 60); empty or None → None (the limit is off). The unit is read by
    its first letter (second, minute, hour, day), as DRF reads it."""
    if not rate:
        return None
    count, _, unit = rate.partition("/")
    seconds = RATE_UNITS.get(unit.strip()[:1].lower())
    if not count.strip().isdigit() or seconds is None:
        raise ValueError(f"{rate!r} is not N/second, N/minute, N/hour or N/day")
    return int(count), seconds


def _cache_key(*parts) -> str:
    return ":".join([settings.THROTTLE_KEY_PREFIX, *map(str, parts)])


def window_hit(key: str, limit: int, seconds: int) -> tuple[bool, float]:
    """Count one request against ``key``: (allowed, seconds until the window closes)."""
    count, left_ms = _window_script()(keys=[key], args=[seconds * 1000])
    return int(count) <= limit, max(int(left_ms), 0) / 1000


class _WindowThrottle(BaseThrottle):
    """A DRF throttle over :func:`window_hit`; subclasses name their setting and their key."""

    rate_setting = ""

    def caller_key(self, request) -> str | None:
        raise NotImplementedError

    def allow_request(self, request, view) -> bool:
        rate = parse_rate(getattr(settings, self.rate_setting))
        key = self.caller_key(request) if rate is not None else None
        if rate is None or key is None:
            return True
        allowed, self._wait = window_hit(key, *rate)
        return allowed

    def wait(self) -> float | None:
        # DRF rounds it up into Retry-After; never 0 for a refused request.
        return max(math.ceil(self._wait), 1)


class ApiCallerRateThrottle(_WindowThrottle):
    """Per API key (a key is a caller of its own), else per signed-in person."""

    rate_setting = "API_RATE_LIMIT"

    def caller_key(self, request):
        if isinstance(request.auth, ApiKey):
            return _cache_key("throttle", "key", request.auth.pk)
        if request.user and request.user.is_authenticated:
            return _cache_key("throttle", "user", request.user.pk)
        return None


def client_address(request) -> str:
    """The address a request came from, as the server (not the client) says."""
    return request.META.get("REMOTE_ADDR") or ""


def anonymous_key(address: str) -> str:
    return _cache_key("throttle", "anon", address)


class ApiAnonymousRateThrottle(_WindowThrottle):
    """Per address, for the API paths open without credentials (the schema, the docs); the
    refused ones (401) count on the same key, in the exception handler."""

    rate_setting = "API_ANON_RATE_LIMIT"

    def caller_key(self, request):
        if request.user and request.user.is_authenticated:
            return None
        return anonymous_key(client_address(request))


def anonymous_refusal_hit(address: str) -> float | None:
    """Count one 401 against ``address``; the seconds to wait when it is over its limit."""
    rate = parse_rate(settings.API_ANON_RATE_LIMIT)
    if rate is None:
        return None
    allowed, wait = window_hit(anonymous_key(address), *rate)
    return None if allowed else max(math.ceil(wait), 1)


def _failures_key(ip_address: str) -> str:
    return _cache_key("key-failures", ip_address)


def key_guessing_blocked(ip_address: str) -> int | None:
    """Seconds until ``ip_address`` may present a key again, or None when it may now."""
    limit = settings.API_KEY_FAILURE_LIMIT
    if not limit:
        return None
    key = _failures_key(ip_address)
    if (cache.get(key) or 0) < limit:
        return None
    # The window's remaining time is not kept; its whole length is an upper bound a client can use.
    return settings.API_KEY_FAILURE_WINDOW_SECONDS


def key_failure_record(ip_address: str) -> None:
    """Count one unknown or revoked key from ``ip_address``; the window starts at the first."""
    if not settings.API_KEY_FAILURE_LIMIT:
        return
    key = _failures_key(ip_address)
    cache.add(key, 0, timeout=settings.API_KEY_FAILURE_WINDOW_SECONDS)
    try:
        cache.incr(key)
    except ValueError:  # expired between add and incr: start a new window
        cache.set(key, 1, timeout=settings.API_KEY_FAILURE_WINDOW_SECONDS)
