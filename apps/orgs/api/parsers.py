"""The API's JSON parser: DRF's, with the two limits a prober found missing.

DRF hands the raw request stream to the parser, so Django's DATA_UPLOAD_MAX_MEMORY_SIZE never
applies to a JSON body: a body over it is refused here with a 413 in JSON. And Python's decoder
raises RecursionError (not ValueError) on JSON nested about a thousand deep, which DRF let through
as a 500; anything nested deeper than JSON_BODY_MAX_DEPTH is a 422 naming the body.
"""

from __future__ import annotations

from django.conf import settings
from rest_framework import exceptions, parsers, status
from rest_framework.utils import json

from agenticos.params import JSON_MAX_DEPTH

from .exceptions import UnprocessableEntity

# The body as a whole may nest a little deeper than one JSON field of it (a spec inside a body).
JSON_BODY_MAX_DEPTH = JSON_MAX_DEPTH * 2


class PayloadTooLarge(exceptions.APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_detail = "The request body is larger than this API accepts."
    default_code = "payload_too_large"


def body_limit() -> int:
    return settings.DATA_UPLOAD_MAX_MEMORY_SIZE


def too_large() -> PayloadTooLarge:
    return PayloadTooLarge(
        f"The request body is larger than this API accepts ({body_limit()} bytes at most)."
    )


def _depth_exceeds(value, limit: int) -> bool:
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        if isinstance(item, dict):
            stack.extend((child, depth + 1) for child in item.values())
        elif isinstance(item, list):
            stack.extend((child, depth + 1) for child in item)
    return False


class BoundedJSONParser(parsers.JSONParser):
    def parse(self, stream, media_type=None, parser_context=None):
        parser_context = parser_context or {}
        request = parser_context.get("request")
        limit = body_limit()
        if request is not None:
            try:
                declared = int(request.META.get("CONTENT_LENGTH") or 0)
            except ValueError:
                declared = 0
            if declared > limit:
                raise too_large()
        raw = stream.read(limit + 1) if stream is not None else b""
        if len(raw) > limit:
            raise too_large()
        try:
            text = raw.decode(parsers.get_encoding(parser_context))
        except UnicodeDecodeError as exc:
            raise exceptions.ParseError(f"JSON parse error - {exc}") from None
        try:
            data = json.loads(text) if self.strict else json.loads(text, parse_constant=None)
        except RecursionError:
            raise UnprocessableEntity(
                {"body": [f"is nested deeper than {JSON_BODY_MAX_DEPTH} levels."]}
            ) from None
        except ValueError as exc:
            raise exceptions.ParseError(f"JSON parse error - {exc}") from None
        if _depth_exceeds(data, JSON_BODY_MAX_DEPTH):
            raise UnprocessableEntity(
                {"body": [f"is nested deeper than {JSON_BODY_MAX_DEPTH} levels."]}
            )
        return data
