"""Runs over the API: start one, read the history, read one and its transcript, cancel one; its
parked calls, its questions, answering one, and resuming it. Parse, call a service or a
selector, shape."""

from __future__ import annotations

from django.http import Http404
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_view,
)
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response
from rest_framework.views import APIView

from agenticos import params as parsing
from agenticos.params import ID_PATH_PATTERN
from apps.agents.selectors import agent_for
from apps.approvals import selectors as approval_selectors
from apps.approvals import services as approval_services
from apps.approvals.api.serializers import (
    AnswerSerializer,
    ParkedCallsSerializer,
    QuestionRowSerializer,
    RunQuestionsSerializer,
)
from apps.approvals.models import Question
from apps.orgs import permissions as perms
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
from apps.ratings.selectors import turn_ratings
from apps.runs import resume, selectors, services
from apps.runs.choices import RunStatus, Surface
from apps.runs.exports import RUNS_TABLE, runs_export
from apps.runs.filters import ORDERS, RATINGS, TOOK_OVER_MS_MAX, parse_run_history
from apps.runs.models import Run

from .serializers import (
    RunCreateSerializer,
    RunSerializer,
    RunTranscriptSerializer,
    StepSerializer,
    TurnSerializer,
)

EMPTY_RATINGS = {"my_rating": None, "ratings_up": 0, "ratings_down": 0, "latest_down_comment": ""}

# The run history's filters (apps/runs/filters.py parses them; a value outside its type is a 422).
HISTORY_PARAMETERS = [
    OpenApiParameter("status", str, many=True, enum=RunStatus.values, description="Repeatable."),
    OpenApiParameter("surface", str, many=True, enum=Surface.values, description="Repeatable."),
    OpenApiParameter("user_id", int, many=True, description="Repeatable."),
    OpenApiParameter("model_label", str, many=True, description="Repeatable."),
    OpenApiParameter(
        "started_from", MOMENT_SCHEMA, description="A date (the whole day) or a date-time."
    ),
    OpenApiParameter(
        "started_to", MOMENT_SCHEMA, description="Inclusive; a date means the whole day."
    ),
    OpenApiParameter(
        "period",
        {"type": "string", "pattern": parsing.PERIOD_QUERY_PATTERN},
        description="The last N UTC days, today included (`30d`, 1d..366d): the dashboard's "
        "window; empty is unset. Not together with started_from / started_to.",
    ),
    OpenApiParameter("environment_id", int),
    OpenApiParameter("exposure_id", int),
    OpenApiParameter("agent_version_id", int),
    OpenApiParameter(
        "took_over_ms",
        {"type": "integer", "minimum": 0, "maximum": TOOK_OVER_MS_MAX},
        description="Only runs that took longer (ms).",
    ),
    OpenApiParameter("rated", str, enum=list(RATINGS)),
    OpenApiParameter("order_by", str, enum=list(ORDERS)),
    OpenApiParameter("descending", bool),
    OpenApiParameter("agent_id", int),
    OpenApiParameter("include_delegations", bool),
    OpenApiParameter("parent_run_id", int),
]


@extend_schema_view(list=extend_schema(parameters=HISTORY_PARAMETERS))
class RunViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """`POST` starts a run (`agents:run`, or a run grant on the agent) and answers it `queued`;
    `GET` lists the run history (top-level runs by default, filtered and ordered by the parameters
    below; a value outside its type is a 422); `GET {id}/` and `GET {id}/transcript/` read one run — every run of the organization
    with `runs:view`, else your own, and another organization's run is a 404 like a missing id;
    `POST {id}/cancel/` stops one."""

    # Path ids are ASCII digits: "5 ", "²" and "abc" do not route (a 404 like a missing id).
    lookup_value_regex = ID_PATH_PATTERN

    serializer_class = RunSerializer
    queryset = Run.objects.none()  # the schema's model; get_queryset scopes the reads
    # Who may start a run depends on the agent named in the body (agents:run, or a run grant on
    # that agent): run_create decides it with the agents app's selector.

    def get_queryset(self):
        if self.action == "list":
            filters = parse_run_history(self.request.query_params)
            return selectors.run_history(self.request.user, self.request.organization, filters)
        return selectors.runs_visible_to(self.request.user, self.request.organization).order_by(
            "-created_at"
        )

    def get_object(self):
        # A path id outside its type reads as absent: a 404 like an id that never existed.
        pk = parsing.parse_id("id", str(self.kwargs.get("pk", "")), {})
        if pk is None:
            raise Http404
        run = selectors.run_for_reader(self.request.user, self.request.organization, pk)
        if run is None:
            raise Http404
        return run

    @extend_schema(request=RunCreateSerializer, responses={201: RunSerializer})
    def create(self, request):
        data = RunCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        agent = agent_for(request.user, request.organization, values["agent_id"])
        if agent is None:
            raise Http404
        conversation = None
        if values.get("conversation_id") is not None:
            # Only the conversation's owner posts into it: runs:view reads, it does not speak.
            conversation = selectors.conversation_for_writer(
                request.user, request.organization, values["conversation_id"]
            )
            if conversation is None:
                raise Http404
        run = services.run_create(
            actor=request.user,
            organization=request.organization,
            agent=agent,
            input=values["input"],
            conversation=conversation,
            approval_mode=values["approval_mode"],
        )
        return Response(RunSerializer(run).data, status=status.HTTP_201_CREATED)

    @extend_schema(responses={200: RunTranscriptSerializer})
    @action(detail=True, methods=["get"], url_path="transcript")
    def transcript(self, request, pk=None):
        transcript = selectors.run_transcript(self.get_object())
        if transcript["turns"]:
            ratings = turn_ratings(
                [turn["id"] for turn in transcript["turns"]], reader_id=request.user.pk
            )
            for turn in transcript["turns"]:
                turn.update(ratings.get(turn["id"], EMPTY_RATINGS))
        return Response(
            {
                "run_id": transcript["run_id"],
                "conversation_id": transcript["conversation_id"],
                "turns": None
                if transcript["turns"] is None
                else TurnSerializer(transcript["turns"], many=True).data,
                "steps": StepSerializer(transcript["steps"], many=True).data,
            }
        )

    @extend_schema(request=None, responses={200: RunSerializer})
    @action(detail=True, methods=["post"], url_path="cancel")
    def cancel(self, request, pk=None):
        run = services.run_cancel(actor=request.user, run=self.get_object())
        return Response(RunSerializer(run).data)


class RunExportView(APIView):
    """`GET /runs/export/`: the run history as CSV or JSONL (`?fmt=csv|jsonl`) over
    `started_from`..`started_to` (both required), the same filters and top-level default as
    `GET /runs/`, at most 10,000 rows; recorded as `runs.export` before the file is sent.
    `runs:view`."""

    required_permission = perms.RUNS_VIEW
    content_negotiation_class = FileDownloadNegotiation

    @extend_schema(
        # The window is named by its dates; `period` (the dashboard's) is the list's alone.
        parameters=with_parameters_replaced(
            HISTORY_PARAMETERS,
            [
                *export_window_parameters(
                    "started_from",
                    "started_to",
                    from_description="A date (the whole day) or a date-time, inclusive.",
                    to_description="Inclusive; a date means the whole day.",
                ),
                export_format_parameter(tuple(RUNS_TABLE.formats)),
            ],
            drop=("period", "order_by", "descending"),
        ),
        responses=export_responses(tuple(RUNS_TABLE.formats)),
    )
    def get(self, request):
        return runs_export(
            user=request.user,
            organization=request.organization,
            params=request.query_params,
            surface="api",
        ).response()


def _run_for_decider(request, pk) -> Run:
    run = selectors.run_for_decider(request.organization, pk)
    if run is None:
        raise Http404
    return run


def _run_for_reader(request, pk) -> Run:
    run = selectors.run_for_reader(request.user, request.organization, pk)
    if run is None:
        raise Http404
    return run


class RunParkedView(APIView):
    """`GET /runs/{id}/parked/` (approvals:decide): the calls waiting for a decision — the approval,
    the tool and its arguments — so a chat rebuilds its approval card after a reload. Empty for a
    run that is not parked."""

    required_permission = perms.APPROVALS_DECIDE

    @extend_schema(responses={200: ParkedCallsSerializer})
    def get(self, request, pk: int):
        run = _run_for_decider(request, pk)
        calls = (
            approval_selectors.parked_calls(run)
            if run.status == RunStatus.AWAITING_APPROVAL
            else []
        )
        return Response(
            {
                "run_id": run.pk,
                "status": run.status,
                "calls": [approval_selectors.approval_row(a) for a in calls],
            }
        )


class RunResumeView(APIView):
    """`POST /runs/{id}/resume/` (approvals:decide): continue a parked run whose calls are all
    decided. Checked now and answered `202` with the run, still parked: a worker continues it,
    exactly as after the last decision (follow it on the run's stream or `GET runs/{id}/`). A run
    with calls still undecided, one that is not parked, or one whose spec no longer builds is a
    409 naming why; the decisions are kept and the run stays resumable."""

    required_permission = perms.APPROVALS_DECIDE

    @extend_schema(
        request=None,
        responses={
            202: OpenApiResponse(
                response=RunSerializer, description="The continuation is queued for a worker."
            ),
            409: OpenApiResponse(
                response=ErrorSerializer,
                description="Not resumable now (not parked, calls undecided, or the spec no "
                "longer builds).",
            ),
        },
    )
    def post(self, request, pk: int):
        run = _run_for_decider(request, pk)
        try:
            run = resume.run_resume_request(run=run)
        except resume.ResumeRefused as exc:
            raise Conflict(exc.sentence) from exc
        return Response(RunSerializer(run).data, status=status.HTTP_202_ACCEPTED)


class RunQuestionsView(APIView):
    """`GET /runs/{id}/questions/`: the question card a run is waiting on (any device re-reads it)."""

    @extend_schema(responses={200: RunQuestionsSerializer})
    def get(self, request, pk: int):
        run = _run_for_reader(request, pk)
        return Response(
            {
                "run_id": run.pk,
                "status": run.status,
                "questions": [
                    approval_selectors.question_row(q)
                    for q in approval_selectors.run_questions(run)
                ],
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
        run = _run_for_reader(request, pk)
        data = AnswerSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        pending = Question.objects.filter(run=run).order_by("created_at", "pk")
        if values.get("question_id") is not None:
            question: Question | None = get_object_or_404(pending, pk=values["question_id"])
        else:
            question = pending.filter(status="pending").first()
        if question is None:
            raise Conflict("This run is not waiting for an answer.")
        try:
            question = approval_services.question_answer(
                actor=request.user,
                question=question,
                answers=values.get("answers"),
                declined=values.get("declined", False),
            )
        except approval_services.AlreadyDecided as exc:
            raise Conflict(str(exc)) from exc
        return Response(approval_selectors.question_row(question))


class ConversationView(APIView):
    """`DELETE /conversations/{id}/`: delete a conversation — its messages and its stored media
    (the images and large parts the media capability kept out of its history). Yours, or any of
    the organization's with `settings:manage`; its runs stay in the run history, unlinked.
    Another organization's conversation is a 404 like a missing id; one with a run still going
    or waiting on a person is a 409. Audited (`conversation.delete`)."""

    @extend_schema(
        request=None,
        responses={
            204: OpenApiResponse(description="Deleted."),
            403: OpenApiResponse(response=ErrorSerializer, description="Not yours to delete."),
            404: OpenApiResponse(response=ErrorSerializer, description="No such conversation."),
            409: OpenApiResponse(
                response=ErrorSerializer, description="A run of it is still going or waiting."
            ),
        },
    )
    def delete(self, request, pk: int):
        conversation = get_object_or_404(
            selectors.conversations_visible_to(request.user, request.organization), pk=pk
        )
        try:
            services.conversation_delete(actor=request.user, conversation=conversation)
        except services.ConversationBusy as exc:
            raise Conflict(exc.sentence) from exc
        return Response(status=status.HTTP_204_NO_CONTENT)
