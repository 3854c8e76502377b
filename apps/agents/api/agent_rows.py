"""A viewset over rows that belong to one agent each (a trigger, a chat binding).

The list is the rows of the agents the caller can see, narrowed by ``?agent_id=`` (parsed by the
one parsing layer: a bad value is a 422 naming it); one row is the app's selector's answer or a
404 — another organization's row and a missing one look the same.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.http import Http404
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import mixins

from agenticos import params as parsing
from agenticos.params import ID_PATH_PATTERN


class AgentRowsMixin(mixins.ListModelMixin, mixins.RetrieveModelMixin):
    """Set ``rows_visible_to(user, organization)`` and ``row_for(user, organization, pk)``."""

    lookup_value_regex = ID_PATH_PATTERN
    rows_visible_to: Callable[..., Any]
    row_for: Callable[..., Any]

    def get_queryset(self):
        rows = type(self).rows_visible_to(self.request.user, self.request.organization)
        if self.action == "list":
            errors: dict = {}
            raw = self.request.query_params.get("agent_id")
            agent_id = parsing.parse_id("agent_id", raw, errors) if raw else None
            parsing.raise_errors(errors)
            if agent_id is not None:
                rows = rows.filter(agent_id=agent_id)
        return rows.order_by("name", "pk")

    def get_object(self):
        row = type(self).row_for(
            self.request.user, self.request.organization, self.kwargs.get("pk", "")
        )
        if row is None:
            raise Http404
        return row

    @extend_schema(parameters=[OpenApiParameter("agent_id", int)])
    def list(self, request, *args, **kwargs):
        return super().list(request, *args, **kwargs)
