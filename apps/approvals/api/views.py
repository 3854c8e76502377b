"""The approvals API: the queue and log, deciding, the export. Thin: parse, call a selector or a
service, shape. A run's own endpoints (its parked calls, its questions, answering, resuming) are
the runs API's (apps/runs/api/views.py): approvals sits below runs and never imports it."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.generics import GenericAPIView
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.orgs.api.exceptions import Conflict
from apps.orgs.api.negotiation import FileDownloadNegotiation
from apps.orgs.api.schema import (
    MOMENT_SCHEMA,
    ErrorSerializer,
    export_format_parameter,
    export_responses,
    export_window_parameters,
    with_parameters_replaced,
)
from apps.orgs.permissions import APPROVALS_DECIDE

from .. import selectors, services
from ..choices import ApprovalStatus
from ..exports import APPROVALS_TABLE, approvals_export
from .serializers import ApprovalPageSerializer, ApprovalRowSerializer, DecideSerializer

FILTER_PARAMETERS = [
    OpenApiParameter(
        "status", str, many=True, enum=ApprovalStatus.values, description="Default: pending."
    ),
    OpenApiParameter("triggered_by_user_id", int),
    OpenApiParameter("created_from", MOMENT_SCHEMA, description="A date or a date-time."),
    OpenApiParameter(
        "created_to", MOMENT_SCHEMA, description="Inclusive; a date means the whole day."
    ),
    OpenApiParameter("oldest_first", bool, description="Default: true."),
]
CONFLICT = OpenApiResponse(response=ErrorSerializer, description="Already decided.")


class ApprovalListView(GenericAPIView):
    """`GET /approvals/`: pending by default (the queue); `?status=approved&status=rejected` is the
    log, with the decider's name and note. Oldest first by default: nothing else surfaces the row
    that most needs to be seen. Also answers the age of the oldest wait."""

    required_permission = APPROVALS_DECIDE
    filter_backends: list = []

    @extend_schema(
        parameters=[
            *FILTER_PARAMETERS,
            OpenApiParameter("limit", int),
            OpenApiParameter("offset", int),
        ],
        responses={200: ApprovalPageSerializer},
    )
    def get(self, request):
        filters = selectors.parse_approval_filters(request.query_params)
        approvals = filters.apply(
            selectors.approvals_visible_to(request.user, request.organization)
        )
        page = self.paginate_queryset(approvals)
        response = self.get_paginated_response([selectors.approval_row(a) for a in page])
        response.data["oldest_pending_age_seconds"] = selectors.oldest_pending_age_seconds(
            request.user, request.organization
        )
        return response


class ApprovalDecideView(APIView):
    """`POST /approvals/{id}/decide/` `{"decision": "approve"|"reject", "note": "..."}`. A call
    that was already decided — by a person or by the expiry sweep — is a 409."""

    required_permission = APPROVALS_DECIDE

    @extend_schema(request=DecideSerializer, responses={200: ApprovalRowSerializer, 409: CONFLICT})
    def post(self, request, pk: int):
        approval = get_object_or_404(
            selectors.approvals_visible_to(request.user, request.organization), pk=pk
        )
        data = DecideSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            approval = services.approval_decide(
                actor=request.user,
                approval=approval,
                decision=data.validated_data["decision"],
                note=data.validated_data.get("note", ""),
            )
        except services.AlreadyDecided as exc:
            raise Conflict(str(exc)) from exc
        approval = selectors.approvals_visible_to(request.user, request.organization).get(
            pk=approval.pk
        )
        return Response(selectors.approval_row(approval))


class ApprovalExportView(APIView):
    """`GET /approvals/export/`: the log as CSV or JSONL (`?fmt=csv|jsonl`) over
    `created_from`..`created_to` (both required), the same filters as the list, at most 10,000
    rows; recorded as `approvals.export`."""

    required_permission = APPROVALS_DECIDE
    content_negotiation_class = FileDownloadNegotiation

    @extend_schema(
        parameters=with_parameters_replaced(
            FILTER_PARAMETERS,
            [
                *export_window_parameters(
                    "created_from",
                    "created_to",
                    from_description="A date or a date-time, inclusive.",
                    to_description="Inclusive; a date means the whole day.",
                ),
                export_format_parameter(tuple(APPROVALS_TABLE.formats)),
            ],
            drop=("oldest_first",),
        ),
        responses=export_responses(tuple(APPROVALS_TABLE.formats)),
    )
    def get(self, request):
        return approvals_export(
            user=request.user,
            organization=request.organization,
            params=request.query_params,
            surface="api",
        ).response()
