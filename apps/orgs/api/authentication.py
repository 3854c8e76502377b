"""API authentication: `Authorization: Bearer <api key>` acts as the key's issuer in one org."""

from __future__ import annotations

from rest_framework import authentication, exceptions

from apps.orgs.services import API_KEY_PREFIX, api_key_authenticate


class ApiKeyAuthentication(authentication.BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request):
        header = authentication.get_authorization_header(request).decode("latin-1")
        if not header:
            return None
        scheme, _, raw_key = header.partition(" ")
        if scheme != self.keyword:
            return None
        raw_key = raw_key.strip()
        if not raw_key.startswith(API_KEY_PREFIX):
            raise exceptions.AuthenticationFailed("Invalid API key.")
        api_key = api_key_authenticate(raw_key)
        if api_key is None:
            # The same sentence for an unknown key and a revoked one: no oracle for guessing.
            raise exceptions.AuthenticationFailed("Invalid API key.")
        return api_key.user, api_key

    def authenticate_header(self, request) -> str:
        return self.keyword
