"""Websocket authentication: the console's session cookie, or `Authorization: Bearer <key>`
from a non-browser client (which also fixes the organization to the key's)."""

from __future__ import annotations

from channels.auth import AuthMiddlewareStack
from channels.db import database_sync_to_async
from channels.middleware import BaseMiddleware


@database_sync_to_async
def _user_for_key(raw_key: str, ip_address: str):
    from apps.orgs.services import API_KEY_PREFIX, api_key_authenticate
    from apps.orgs.throttling import key_failure_record, key_guessing_blocked

    # The same limit on guessing keys as the HTTP API's: a blocked address is refused unchecked.
    if key_guessing_blocked(ip_address) is not None:
        return None, None, None
    api_key = api_key_authenticate(raw_key) if raw_key.startswith(API_KEY_PREFIX) else None
    if api_key is None:
        key_failure_record(ip_address)
        return None, None, None
    return api_key.user, api_key.organization, api_key.pk


def _bearer(scope) -> str | None:
    from apps.orgs.api.authentication import bearer_key

    headers = dict(scope.get("headers") or [])
    return bearer_key(headers.get(b"authorization", b"").decode("latin-1"))


class _BearerMiddleware(BaseMiddleware):
    async def __call__(self, scope, receive, send):
        raw_key = _bearer(scope)
        if raw_key is not None:
            client = scope.get("client") or ("", 0)
            user, organization, key_id = await _user_for_key(raw_key, client[0] or "")
            if user is not None:
                # The key's id lets a consumer notice a revocation before its next send.
                scope = {
                    **scope,
                    "user": user,
                    "api_key_organization": organization,
                    "api_key_id": key_id,
                }
            else:
                # A bad key never falls back to the session cookie (the origin check was skipped).
                from django.contrib.auth.models import AnonymousUser

                scope = {**scope, "user": AnonymousUser()}
        return await super().__call__(scope, receive, send)


def WebsocketAuthMiddleware(inner):  # noqa: N802 - reads like the class it wraps
    return AuthMiddlewareStack(_BearerMiddleware(inner))


class BrowserOriginValidator:
    """Channels' AllowedHostsOriginValidator for cookie sessions only.

    The origin check exists because a browser sends the session cookie on a cross-site
    websocket handshake (cross-site websocket hijacking). An ``Authorization: Bearer`` key is no
    ambient credential — a browser never attaches one on its own — and the non-browser clients
    that use keys send no ``Origin`` at all, which the validator would refuse. So a handshake
    carrying a bearer key skips the origin check; everything else goes through it.
    """

    def __init__(self, inner):
        from channels.security.websocket import AllowedHostsOriginValidator

        self.inner = inner
        self.validated = AllowedHostsOriginValidator(inner)

    async def __call__(self, scope, receive, send):
        if _bearer(scope) is not None:
            return await self.inner(scope, receive, send)
        return await self.validated(scope, receive, send)
