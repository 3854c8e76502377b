"""What the OpenAPI document says beyond each view's own schema (docs/api.md).

* **Bearer keys**: ``Authorization: Bearer <api key>`` is declared as an HTTP bearer scheme, so the
  docs page can call the API with a key (and a client generator knows how to).
* **Errors**: every operation that needs a caller documents what the permission layer answers
  for any request — 401 (no or a bad credential), 403 (a missing permission), 404 (a row, or an
  ``X-Organization-Id``, the caller cannot see), 422 (a value outside its type, in the body, the
  query or that header) and 429 (a rate limit); one with a body adds 400 (not JSON) and 413 (too
  large). A view adds what only it answers (409 for a second decision) with ``extend_schema``.
* ``X-Organization-Id`` is declared on every operation that needs a caller.
"""

from __future__ import annotations

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse
from rest_framework import serializers

from .authentication import ApiKeyAuthentication
from .permissions import OrganizationPermission


class ErrorSerializer(serializers.Serializer):
    """Every error but a validation error: one sentence."""

    detail = serializers.CharField()


VALIDATION_ERROR_SCHEMA = {
    "type": "object",
    "description": (
        "Each key names what is wrong — a body field, a query parameter, `body`, "
        "`X-Organization-Id` or `non_field_errors` — and its value says why (a list of sentences;"
        " a nested field nests)."
    ),
    "additionalProperties": True,
}

_COMMON_ERRORS = {
    "401": "No credential, or a key that is unknown, revoked or expired.",
    "403": "The caller lacks the permission this operation needs.",
    "404": "Nothing with this id that the caller can see (another organization's reads the same).",
    "422": "A value outside its type; the body names each one.",
    "429": "Rate limited (see the Retry-After header).",
}
_BODY_ERRORS = {
    "400": "The body is not valid JSON.",
    "413": "The body is larger than the API accepts.",
}

ORGANIZATION_HEADER = OpenApiParameter(
    "X-Organization-Id",
    int,
    OpenApiParameter.HEADER,
    required=False,
    description=(
        "With a session: the organization to act in (default: the console's current one). "
        "A key always acts in its own organization."
    ),
)


class ApiKeyScheme(OpenApiAuthenticationExtension):
    target_class = ApiKeyAuthentication
    name = "bearerAuth"

    def get_security_definition(self, auto_schema):
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "An API key (`aos_…`) from Settings → API keys or `POST /api/v1/api-keys/`.",
        }


class AgenticosAutoSchema(AutoSchema):
    def _needs_caller(self) -> bool:
        return any(
            isinstance(permission, OrganizationPermission)
            for permission in self.view.get_permissions()
        )

    def get_override_parameters(self):
        parameters = list(super().get_override_parameters())
        if self._needs_caller():
            parameters.append(ORGANIZATION_HEADER)
        return parameters

    def _get_response_bodies(self, direction="response"):
        responses = super()._get_response_bodies(direction)
        if direction != "response" or not self._needs_caller():
            return responses
        errors = dict(_COMMON_ERRORS)
        if self.method in ("POST", "PUT", "PATCH"):
            errors.update(_BODY_ERRORS)
        for code, description in errors.items():
            if code in responses:
                continue
            body = VALIDATION_ERROR_SCHEMA if code == "422" else ErrorSerializer
            responses[code] = self._get_response_for_code(
                OpenApiResponse(response=body, description=description), code, direction=direction
            )
        return dict(sorted(responses.items()))
