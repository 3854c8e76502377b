"""Ratings over the API: a person's thumb on an assistant turn, and the summary counts."""

from __future__ import annotations

from django.http import Http404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import PermissionDenied
from rest_framework.response import Response
from rest_framework.views import APIView

from agenticos.params import StrictJSONMixin
from apps.orgs import permissions as perms
from apps.orgs.api.exceptions import UnprocessableEntity
from apps.ratings import selectors, services
from apps.ratings.models import Thumb
from apps.spend.api.views import WINDOW_PARAMETERS
from apps.spend.filters import parse_spend_window

SCOPES = ("org", "own")


class RatingSerializer(StrictJSONMixin, serializers.Serializer):
    thumb = serializers.ChoiceField(choices=Thumb.choices)
    comment = serializers.CharField(required=False, allow_blank=True, default="", max_length=2000)


class MessageRatingView(APIView):
    """`PUT /messages/{id}/rating/` `{"thumb": "up" | "down", "comment": "..."}`: your rating of
    an assistant turn you may read (your conversation, or a run you may read); rating again
    changes it. `DELETE` removes yours. Answers the turn's ratings as a transcript shows them."""

    required_permission = None

    def _message(self, request, pk):
        message = selectors.message_for_rater(request.user, request.organization, pk)
        if message is None:
            raise Http404
        return message

    @extend_schema(request=RatingSerializer, responses={200: OpenApiTypes.OBJECT})
    def put(self, request, pk: int):
        message = self._message(request, pk)
        data = RatingSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        services.rating_set(
            actor=request.user,
            message=message,
            thumb=data.validated_data["thumb"],
            comment=data.validated_data["comment"],
        )
        return Response(self._shown(message, request))

    @extend_schema(request=None, responses={204: None})
    def delete(self, request, pk: int):
        services.rating_clear(actor=request.user, message=self._message(request, pk))
        return Response(status=status.HTTP_204_NO_CONTENT)

    def _shown(self, message, request) -> dict:
        shown = selectors.turn_ratings([message.pk], reader_id=request.user.pk).get(message.pk)
        return {"message_id": message.pk, "run_id": message.run_id, **(shown or {})}


class RatingsSummaryView(APIView):
    """`GET /ratings/summary/`: the window's up/down counts and a per-day series (`days` or
    `from`/`to`, as `/stats/usage/`). `scope=org` (default) needs `runs:view`; `scope=own` is
    the ratings on your own runs. Counts only: comments stay behind a run's detail."""

    required_permission = None

    @extend_schema(
        parameters=[
            OpenApiParameter("scope", str, enum=list(SCOPES), description="Default: org."),
            *WINDOW_PARAMETERS,
        ],
        responses={
            200: OpenApiResponse(
                response=OpenApiTypes.OBJECT,
                description="since, until, period_days, scope, up, down, total, up_share, daily.",
            )
        },
    )
    def get(self, request):
        scope = (request.query_params.get("scope") or "org").strip()
        if scope not in SCOPES:
            raise UnprocessableEntity({"scope": [f"must be one of: {', '.join(SCOPES)}"]})
        if scope == "org" and not perms.has_org_permission(
            request.user, request.organization, perms.RUNS_VIEW
        ):
            raise PermissionDenied(
                f"{perms.RUNS_VIEW} is required for scope=org; ask for scope=own."
            )
        window = parse_spend_window(request.query_params)
        summary = selectors.ratings_summary(
            request.organization, window, own_user_id=request.user.pk if scope == "own" else None
        )
        summary["daily"] = [{**p, "date": p["date"].isoformat()} for p in summary["daily"]]
        return Response({**_window(window), "scope": scope, **summary})


def _window(window) -> dict:
    return {
        key: value.isoformat() if hasattr(value, "isoformat") else value
        for key, value in window.as_dict().items()
    }
