"""GET /api/v1/audit/ and /audit/export/: parse, call a selector or the exporter, shape."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import viewsets
from rest_framework.views import APIView

from agenticos.params import ID_PATH_PATTERN
from apps.audit.exports import AUDIT_TABLE, audit_export
from apps.audit.selectors import audit_entries_visible_to, parse_audit_filters
from apps.orgs.api.negotiation import FileDownloadNegotiation
from apps.orgs.api.schema import (
    MOMENT_SCHEMA,
    export_format_parameter,
    export_responses,
    export_window_parameters,
    with_parameters_replaced,
)
from apps.orgs.permissions import AUDIT_READ

from .serializers import AuditEntrySerializer

FILTER_PARAMETERS = [
    OpenApiParameter("action", str, many=True, description="Only these actions (repeatable)."),
    OpenApiParameter("actor_user_id", int, description="Only entries whose actor is this user."),
    OpenApiParameter(
        "created_from", MOMENT_SCHEMA, description="From this date or date-time, inclusive."
    ),
    OpenApiParameter(
        "created_to",
        MOMENT_SCHEMA,
        description="Up to this date (the whole day) or date-time, inclusive.",
    ),
]


@extend_schema_view(list=extend_schema(parameters=FILTER_PARAMETERS))
class AuditEntryViewSet(viewsets.ReadOnlyModelViewSet):
    """The organization's audit trail, newest first (audit:read). App admins are not exempt:
    what they do is in here too."""

    # Path ids are ASCII digits: "5 ", "²" and "abc" do not route (a 404 like a missing id).
    lookup_value_regex = ID_PATH_PATTERN

    serializer_class = AuditEntrySerializer
    required_permission = AUDIT_READ
    filter_backends: list = []

    def get_queryset(self):
        entries = audit_entries_visible_to(self.request.user, self.request.organization)
        if self.action == "list":
            entries = parse_audit_filters(self.request.query_params).apply(entries)
        return entries.order_by("-created_at", "-sequence")


class AuditExportView(APIView):
    """The trail over a window as CSV or JSONL (`?fmt=csv|jsonl`), at most 10,000 rows.

    Both `created_from` and `created_to` are required; the other filters are those of
    GET /audit/. The download is itself recorded (`audit.export`) before it is sent.
    """

    required_permission = AUDIT_READ
    content_negotiation_class = FileDownloadNegotiation

    @extend_schema(
        parameters=with_parameters_replaced(
            FILTER_PARAMETERS,
            [
                *export_window_parameters(
                    "created_from",
                    "created_to",
                    from_description="From this date or date-time, inclusive.",
                    to_description="Up to this date (the whole day) or date-time, inclusive.",
                ),
                export_format_parameter(tuple(AUDIT_TABLE.formats)),
            ],
        ),
        responses=export_responses(tuple(AUDIT_TABLE.formats)),
    )
    def get(self, request):
        result = audit_export(
            user=request.user,
            organization=request.organization,
            params=request.query_params,
            surface="api",
        )
        return result.response()
