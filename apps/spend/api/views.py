"""Spend over the API: the spend screen's figures, its CSV export, and the usage series.
Parse the window, call a selector, shape."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.exceptions import PermissionDenied
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.orgs import permissions as perms
from apps.orgs.api.exceptions import UnprocessableEntity
from apps.orgs.api.negotiation import FileDownloadNegotiation
from apps.orgs.api.schema import MOMENT_SCHEMA, export_responses, export_window_parameters
from apps.spend.aggregates import SpendScope, spend_overview, usage_stats, window_slices
from apps.spend.exports import spend_export
from apps.spend.filters import parse_spend_window
from apps.spend.usage_cards import usage_cards

from .serializers import spend_payload, usage_cards_payload, usage_payload

USAGE_SCOPES = ("org", "own")
USAGE_GROUPINGS = ("day", "version")

WINDOW_PARAMETERS = [
    OpenApiParameter("days", int, description="The last N days (1..366), default 30."),
    OpenApiParameter("from", MOMENT_SCHEMA, description="A date or a date-time; wins."),
    OpenApiParameter("to", MOMENT_SCHEMA, description="Inclusive; default now."),
]
SPEND = OpenApiResponse(
    response=OpenApiTypes.OBJECT,
    description="since, until, period_days, total, organization, by_agent, by_provider, by_key, "
    "by_user, daily (money as strings).",
)
USAGE = OpenApiResponse(
    response=OpenApiTypes.OBJECT,
    description="since, until, period_days, scope, total_runs, tokens, cost, daily; the cards: "
    "by_provider, outcomes, approvals_waiting, surfaces, latency (p50/p95/p99 ms), active_people, "
    "by_user, by_agent (delegations included), quality (up, down, rated_runs, up_share, and "
    "daily: the thumbs on the runs started each UTC day); by_version with group_by=version.",
)


class SpendView(APIView):
    """`GET /spend/`: the window (`days`, default 30, or `from`/`to`; `from` wins and
    `period_days` is then null), its total (runs plus ingestion), the organization's month to
    date against its cap, and the per-agent rows (`cost_usd`, `run_count`, `partial_run_count`
    over the window; `month_to_date_usd` against `monthly_cap_usd` of the published version),
    by provider, by key, by user and per day. `runs:view`."""

    required_permission = perms.RUNS_VIEW

    @extend_schema(parameters=WINDOW_PARAMETERS, responses={200: SPEND})
    def get(self, request):
        window = parse_spend_window(request.query_params)
        scope = SpendScope.for_reader(request.user, request.organization)
        return Response(spend_payload(spend_overview(scope, window)))


class SpendExportView(APIView):
    """`GET /spend/export/`: the per-agent spend over `from`..`to` (both required) as CSV —
    window figures only (`cost_usd`, `run_count`, `partial_run_count`), at most 10,000 rows;
    recorded as `spend.export` before the file is sent. `runs:view`."""

    required_permission = perms.RUNS_VIEW
    content_negotiation_class = FileDownloadNegotiation

    @extend_schema(
        parameters=export_window_parameters(
            "from",
            "to",
            from_description="A date or a date-time, inclusive.",
            to_description="Inclusive; a date means the whole day.",
        ),
        responses=export_responses(("csv",)),
    )
    def get(self, request):
        return spend_export(
            user=request.user,
            organization=request.organization,
            params=request.query_params,
            surface="api",
        ).response()


class UsageStatsView(APIView):
    """`GET /stats/usage/`: runs, tokens and cost per day over the window (the same `days` /
    `from`/`to` vocabulary as `/spend/`), top-level runs only, cost = runs plus ingestion with
    `model_usd` and `ingestion_usd` beside it. `scope=org` (the default) needs `runs:view`;
    `scope=own` is any member's own runs, with an ingestion half of zero."""

    # Membership is enough to reach the view; scope=org is checked below.
    required_permission = None

    @extend_schema(
        parameters=[
            OpenApiParameter("scope", str, enum=list(USAGE_SCOPES), description="Default: org."),
            OpenApiParameter("group_by", str, enum=list(USAGE_GROUPINGS)),
            *WINDOW_PARAMETERS,
        ],
        responses={200: USAGE},
    )
    def get(self, request):
        scope_name = (request.query_params.get("scope") or "org").strip()
        if scope_name not in USAGE_SCOPES:
            raise UnprocessableEntity({"scope": [f"must be one of: {', '.join(USAGE_SCOPES)}"]})
        if scope_name == "org" and not perms.has_org_permission(
            request.user, request.organization, perms.RUNS_VIEW
        ):
            raise PermissionDenied(
                f"{perms.RUNS_VIEW} is required for scope=org; ask for scope=own."
            )
        # The series is per day; group_by=version adds the version comparison (by_version). A
        # grouping asked for and silently ignored would answer a different question: a 422.
        group_by = request.query_params.get("group_by")
        if group_by not in (None, "", *USAGE_GROUPINGS):
            raise UnprocessableEntity(
                {"group_by": [f"must be one of: {', '.join(USAGE_GROUPINGS)}"]}
            )
        window = parse_spend_window(request.query_params)
        scope = SpendScope.for_reader(request.user, request.organization, own=scope_name == "own")
        slices = window_slices(scope, window)  # the window's days and edges, read once
        payload = usage_payload(usage_stats(scope, window, slices=slices), scope=scope_name)
        payload.update(
            usage_cards_payload(usage_cards(scope, window, group_by=group_by, slices=slices))
        )
        return Response(payload)
