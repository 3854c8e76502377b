"""The approvals API: the queue and log, deciding, the export, a run's parked calls, resuming,
and questions. Thin: parse, call a selector or a service, shape."""

from __future__ import annotations

from django.http import Http404
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.generics import GenericAPIView
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.orgs.api.exceptions import Conflict
from apps.orgs.api.negotiation import FileDownloadNegotiation
from apps.orgs.api.schema import MOMENT_SCHEMA, ErrorSerializer
from apps.orgs.permissions import APPROVALS_DECIDE
from apps.runs.api.serializers import RunSerializer
from apps.runs.models import Run

from .. import selectors, services
from ..choices import ApprovalStatus
from ..exports import approvals_export
from ..models import Question
from ..parking import continuation_report
from .serializers import (
    AnswerSerializer,
    ApprovalPageSerializer,
    ApprovalRowSerializer,
    DecideSerializer,
    ParkedCallsSerializer,
    QuestionRowSerializer,
    ResumeReportSerializer,
    RunQuestionsSerializer,
)

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
    """`GET /approvals/export/`: the log as CSV over `created_from`..`created_to` (both required),
    the same filters as the list, at most 10,000 rows; recorded as `approvals.export`."""

    required_permission = APPROVALS_DECIDE
    content_negotiation_class = FileDownloadNegotiation

    @extend_schema(parameters=FILTER_PARAMETERS, responses={(200, "text/csv"): OpenApiTypes.BINARY})
    def get(self, request):
        return approvals_export(
            user=request.user,
            organization=request.organization,
            params=request.query_params,
            surface="api",
        ).response()


def _run_of_org(request, pk) -> Run:
    run = (
        Run.objects.filter(organization=request.organization, pk=pk)
        .select_related("organization", "user")
        .first()
    )
    if run is None:
        raise Http404
    return run


class RunParkedView(APIView):
    """`GET /runs/{id}/parked/` (approvals:decide): the calls waiting for a decision — the approval,
    the tool and its arguments — so a chat rebuilds its approval card after a reload. Empty for a
    run that is not parked."""

    required_permission = APPROVALS_DECIDE

    @extend_schema(responses={200: ParkedCallsSerializer})
    def get(self, request, pk: int):
        run = _run_of_org(request, pk)
        return Response(
            {
                "run_id": run.pk,
                "status": run.status,
                "calls": [selectors.approval_row(a) for a in selectors.parked_calls(run)],
            }
        )


class RunResumeView(APIView):
    """`POST /runs/{id}/resume/` (approvals:decide): continue a parked run whose calls are all
    decided. Answers the run, the approved calls' own results (`settled`) and the continuation's
    tool calls in order with what each returned (`steps`). A spec that no longer builds is a 409
    naming why; the decisions are kept and the run stays resumable."""

    required_permission = APPROVALS_DECIDE

    @extend_schema(
        request=None,
        responses={
            200: ResumeReportSerializer,
            409: OpenApiResponse(
                response=ErrorSerializer,
                description="Not resumable now (calls undecided, or the spec no longer builds).",
            ),
        },
    )
    def post(self, request, pk: int):
        run = _run_of_org(request, pk)
        history_length = (run.paused_state or {}).get("history_length", 0)
        try:
            services.run_resume(run_id=run.pk)
        except services.ResumeRefused as exc:
            raise Conflict(exc.sentence) from exc
        except services.AlreadyDecided as exc:
            raise Conflict(str(exc)) from exc
        run.refresh_from_db()
        return Response(
            {"run": RunSerializer(run).data, **continuation_report(run, history_length)}
        )


class RunQuestionsView(APIView):
    """`GET /runs/{id}/questions/`: the question card a run is waiting on (any device re-reads it)."""

    @extend_schema(responses={200: RunQuestionsSerializer})
    def get(self, request, pk: int):
        run = selectors.run_visible_to(request.user, request.organization, pk)
        if run is None:
            raise Http404
        return Response(
            {
                "run_id": run.pk,
                "status": run.status,
                "questions": [selectors.question_row(q) for q in selectors.run_questions(run)],
            }
        )


class RunAnswersView(APIView):
    """`POST /runs/{id}/answers/` `{"question_id"?, "answers": [{"header", "selected": [...],
    "custom_answer"?}], "declined": false}`: only the person who was asked may answer."""

    @extend_schema(
        request=AnswerSerializer,
        responses={
            200: QuestionRowSerializer,
            409: OpenApiResponse(
                response=ErrorSerializer, description="Not waiting for an answer, or answered."
            ),
        },
    )
    def post(self, request, pk: int):
        run = selectors.run_visible_to(request.user, request.organization, pk)
        if run is None:
            raise Http404
        data = AnswerSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        pending = Question.objects.filter(run=run).order_by("created_at", "pk")
        if values.get("question_id") is not None:
            question = get_object_or_404(pending, pk=values["question_id"])
        else:
            question = pending.filter(status="pending").first()
            if question is None:
                raise Conflict("This run is not waiting for an answer.")
        try:
            question = services.question_answer(
                actor=request.user,
                question=question,
                answers=values.get("answers"),
                declined=values.get("declined", False),
            )
        except services.AlreadyDecided as exc:
            raise Conflict(str(exc)) from exc
        return Response(selectors.question_row(question))
