"""Websocket authentication: the console's session cookie, or `Authorization: Bearer <key>`
from a non-browser client (which also fixes the organization to the key's)."""

from __future__ import annotations

from channels.auth import AuthMiddlewareStack
from channels.db import database_sync_to_async
from channels.middleware import BaseMiddleware


@database_sync_to_async
def _user_for_key(raw_key: str):
    from apps.orgs.services import api_key_authenticate

    api_key = api_key_authenticate(raw_key)
    return (api_key.user, api_key.organization) if api_key else (None, None)


class _BearerMiddleware(BaseMiddleware):
    async def __call__(self, scope, receive, send):
        headers = dict(scope.get("headers") or [])
        authorization = headers.get(b"authorization", b"").decode("latin-1")
        if authorization.startswith("Bearer "):
            user, organization = await _user_for_key(authorization[len("Bearer ") :].strip())
            if user is not None:
                scope = {**scope, "user": user, "api_key_organization": organization}
        return await super().__call__(scope, receive, send)


def WebsocketAuthMiddleware(inner):  # noqa: N802 - reads like the class it wraps
    return AuthMiddlewareStack(_BearerMiddleware(inner))
