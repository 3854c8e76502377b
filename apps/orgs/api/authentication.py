"""API authentication: `Authorization: Bearer <api key>` acts as the key's issuer in one org."""

from __future__ import annotations

from rest_framework import authentication, exceptions

from apps.orgs.services import API_KEY_PREFIX, api_key_authenticate
from apps.orgs.throttling import key_failure_record, key_guessing_blocked

BEARER = "bearer"


def bearer_key(authorization: str) -> str | None:
    """The key of an ``Authorization`` header whose scheme is Bearer, in any case (RFC 9110:
    auth schemes are case-insensitive); None for any other header."""
    scheme, _, raw_key = authorization.strip().partition(" ")
    if scheme.lower() != BEARER:
        return None
    return raw_key.strip()


class ApiKeyAuthentication(authentication.BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request):
        header = authentication.get_authorization_header(request).decode("latin-1")
        raw_key = bearer_key(header) if header else None
        if raw_key is None:
            return None
        ip_address = request.META.get("REMOTE_ADDR") or ""
        wait = key_guessing_blocked(ip_address)
        if wait is not None:
            raise exceptions.Throttled(
                wait=wait, detail="Too many invalid API keys from this address; wait and retry."
            )
        api_key = api_key_authenticate(raw_key) if raw_key.startswith(API_KEY_PREFIX) else None
        if api_key is None:
            key_failure_record(ip_address)
            # The same sentence for an unknown key and a revoked one: no oracle for guessing.
            raise exceptions.AuthenticationFailed("Invalid API key.")
        return api_key.user, api_key

    def authenticate_header(self, request) -> str:
        return self.keyword
