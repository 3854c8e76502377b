"""The API's pagination: DRF's limit/offset, with a ceiling on ``limit`` and a 422 for a value
outside its type (DRF silently falls back to the default page for ``limit=abc``, and an offset
past bigint reached the database as a 500)."""

from __future__ import annotations

from rest_framework.pagination import LimitOffsetPagination

from agenticos import params as parsing

from .exceptions import UnprocessableEntity

MAX_LIMIT = 500


class BoundedLimitOffsetPagination(LimitOffsetPagination):
    max_limit = MAX_LIMIT

    def _parsed(self, request, name: str, *, minimum: int, maximum: int) -> int | None:
        raw = request.query_params.get(name)
        if raw is None:
            return None
        # An empty value is refused too: the schema says an integer, and "" is not one.
        errors: dict[str, list[str]] = {}
        value = parsing.parse_int(name, raw, errors, minimum=minimum, maximum=maximum)
        if value is None:
            raise UnprocessableEntity(errors)
        return value

    def get_limit(self, request):
        limit = self._parsed(request, self.limit_query_param, minimum=1, maximum=self.max_limit)
        return self.default_limit if limit is None else limit

    def get_offset(self, request):
        offset = self._parsed(
            request, self.offset_query_param, minimum=0, maximum=parsing.BIGINT_MAX
        )
        return offset or 0
