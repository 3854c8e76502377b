"""Rate limits on the API and on API-key guessing (docs/security.md has the defaults).

Two limits, both kept in the cache (Redis), so every web process shares them:

* **Requests per caller** (DRF throttling): an API key, or a signed-in person, gets
  ``API_RATE_LIMIT`` requests (default 600 a minute); an anonymous client ``API_ANON_RATE_LIMIT``
  per IP address. Over it, a 429 with ``Retry-After``.
* **Failed API keys per IP address**: DRF checks permissions and throttles only after
  authentication, so a client guessing keys would be answered 401 as fast as it could ask. After
  ``API_KEY_FAILURE_LIMIT`` unknown or revoked keys from one address within
  ``API_KEY_FAILURE_WINDOW_SECONDS``, every bearer request from that address is a 429 until the
  window passes — over HTTP and over websockets alike.

Signing in to the console is django-axes' (settings ``AXES_*``); its lockouts are audited
(``auth.lockout``, see apps.orgs.services.login_lockout_record).
"""

from __future__ import annotations

from django.conf import settings
from django.core.cache import cache
from rest_framework.throttling import SimpleRateThrottle

from .models import ApiKey


def _cache_key(*parts) -> str:
    return ":".join([settings.THROTTLE_KEY_PREFIX, *map(str, parts)])


class ApiCallerRateThrottle(SimpleRateThrottle):
    """Per API key (a key is a caller of its own), else per signed-in person."""

    scope = "api"

    def get_rate(self):
        # Read per request, not frozen at import: the deployment's setting, and a test's.
        return settings.API_RATE_LIMIT or None

    def get_cache_key(self, request, view):
        if isinstance(request.auth, ApiKey):
            return _cache_key("throttle", "key", request.auth.pk)
        if request.user and request.user.is_authenticated:
            return _cache_key("throttle", "user", request.user.pk)
        return None


class ApiAnonymousRateThrottle(SimpleRateThrottle):
    """Per IP address, for the few API paths open without credentials (the schema, the docs)."""

    scope = "anon"

    def get_rate(self):
        return settings.API_ANON_RATE_LIMIT or None

    def get_cache_key(self, request, view):
        if request.user and request.user.is_authenticated:
            return None
        return _cache_key("throttle", "anon", self.get_ident(request))


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
