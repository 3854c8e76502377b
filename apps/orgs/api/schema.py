"""What the OpenAPI document says beyond each view's own schema (docs/api-schema.md).

* **Bearer keys**: ``Authorization: Bearer <api key>`` is declared as an HTTP bearer scheme, so the
  docs page can call the API with a key (and a client generator knows how to).
* **Errors**: every operation that needs a caller documents what the permission layer answers
  for any request — 401 (no or a bad credential), 403 (a missing permission), 404 (a row, or an
  ``X-Organization-Id``, the caller cannot see), 422 (a value outside its type, in the body, the
  query or that header) and 429 (a rate limit); one with a body adds 400 (not JSON), 413 (too
  large) and 415 (not declared as JSON). A view adds what only it answers (409 for a second decision) with ``extend_schema``.
* ``X-Organization-Id`` (a session's choice of organization; a key ignores it) is described once,
  in the document's description, not as a parameter of every operation: a fuzzer reads a
  declared header set as closed and expects any other header to be refused, which no HTTP
  server does.
"""

from __future__ import annotations

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.plumbing import force_instance
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse
from rest_framework import serializers
from rest_framework.permissions import IsAuthenticated

from agenticos.params import StrictJSONMixin

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
    "422": "A value outside its type, or a body key the operation does not take; the answer "
    "names each one.",
    "429": "Rate limited (see the Retry-After header).",
}
_BODY_ERRORS = {
    "400": "The body is not valid JSON.",
    "413": "The body is larger than the API accepts.",
    "415": "The body is not JSON (the API speaks JSON only).",
}

# A date filter takes a bare date (the whole day) or a date-time; empty means no bound (a
# console form sends its empty fields). Neither OpenAPI format says all three, so a pattern does.
MOMENT_SCHEMA = {
    "type": "string",
    "pattern": r"^$|^[0-9]{4}-[0-9]{2}-[0-9]{2}([T ][0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]{1,6})?)?(Z|[+-][0-9]{2}:?[0-9]{2})?)?$",
    "example": "2025-01-31",
}


def moment_parameter(name: str, description: str) -> OpenApiParameter:
    return OpenApiParameter(name, MOMENT_SCHEMA, description=description)


# --- exports ------------------------------------------------------------------------------
# Every export needs both ends of its window (a 422 names a missing one): declared required, and
# without the empty value a list filter allows.
REQUIRED_MOMENT_SCHEMA = {**MOMENT_SCHEMA, "pattern": MOMENT_SCHEMA["pattern"].removeprefix("^$|")}


def export_window_parameters(
    from_name: str, to_name: str, *, from_description: str, to_description: str
) -> list[OpenApiParameter]:
    return [
        OpenApiParameter(
            from_name, REQUIRED_MOMENT_SCHEMA, required=True, description=from_description
        ),
        OpenApiParameter(
            to_name, REQUIRED_MOMENT_SCHEMA, required=True, description=to_description
        ),
    ]


def export_format_parameter(formats: tuple[str, ...]) -> OpenApiParameter:
    return OpenApiParameter(
        "fmt", str, enum=list(formats), description=f"File format; {formats[0]} by default."
    )


_EXPORT_MEDIA = {
    "csv": ("text/csv", "A CSV file: a header row, then one row per record (UTF-8, CRLF)."),
    "jsonl": ("application/x-ndjson", "JSON Lines: one JSON object per record and line."),
}


def export_responses(formats: tuple[str, ...]) -> dict:
    """An export's file, declared as text in each media type it is offered in.

    Text, not ``format: binary``: a generated client reads a ``text/*`` body as a string, while a
    binary one under a text media type made openapi-python-client's code wrap ``response.text``
    in a ``BytesIO`` and crash.
    """
    return {
        (200, _EXPORT_MEDIA[fmt][0]): OpenApiResponse(
            response=OpenApiTypes.STR, description=_EXPORT_MEDIA[fmt][1]
        )
        for fmt in formats
    }


def with_parameters_replaced(
    parameters: list[OpenApiParameter], replacements: list[OpenApiParameter], *, drop=()
) -> list[OpenApiParameter]:
    """A view's filter parameters with some redeclared (an export's required window) or dropped."""
    replaced = {p.name for p in replacements} | set(drop)
    return [p for p in parameters if p.name not in replaced] + replacements


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
    def _map_basic_serializer(self, serializer, direction):
        schema = super()._map_basic_serializer(serializer, direction)
        # A request serializer refuses a key it does not take (StrictJSONMixin): the schema says
        # so, and a generated client builds bodies of exactly these keys.
        if direction == "request" and isinstance(force_instance(serializer), StrictJSONMixin):
            schema["additionalProperties"] = False
        return schema

    def _needs_caller(self) -> bool:
        # A signed-in person outside any organization (accepting an invitation) is a caller too.
        return any(
            isinstance(permission, (OrganizationPermission, IsAuthenticated))
            for permission in self.view.get_permissions()
        )

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
