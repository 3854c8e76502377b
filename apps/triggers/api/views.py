"""Triggers over the API: create, list, read, pause, resume, fire now, rotate the secret, the
fire history, delete; and the signed events endpoint. Parse, call a service, shape."""

from __future__ import annotations

import logging

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.db import transaction
from django.http import Http404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import PermissionDenied
from rest_framework.parsers import BaseParser
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.agents.api.agent_rows import AgentRowsMixin
from apps.agents.selectors import agent_for
from apps.orgs.api.exceptions import Conflict
from apps.orgs.api.schema import ErrorSerializer
from apps.triggers import selectors, services, signing
from apps.triggers.choices import FireOutcome, FireVia
from apps.triggers.models import Trigger
from apps.vault.services import secret_reveal

from .serializers import (
    EventAcceptedSerializer,
    TriggerCreateSerializer,
    TriggerFireSerializer,
    TriggerSerializer,
    TriggerWithSecretSerializer,
)

logger = logging.getLogger(__name__)


class TriggerViewSet(AgentRowsMixin, mixins.DestroyModelMixin, viewsets.GenericViewSet):
    """`POST` creates a trigger (`agents:edit` and `agents:run` on the agent): `kind` `schedule`
    (with `schedule`: `{"cron", "timezone"}` or `{"every_seconds"}`) or `event` (the answer
    carries `secret` once). `GET` lists the triggers of the agents you can see (`agent_id`
    narrows); `{id}/pause/`, `{id}/resume/`, `{id}/fire/` (fire now: 202 with the fire),
    `{id}/rotate-secret/` (the new `secret`, once), `{id}/fires/` (history), `DELETE {id}/`."""

    serializer_class = TriggerSerializer
    queryset = Trigger.objects.none()
    required_permission = None  # membership; the services decide who may manage
    rows_visible_to = staticmethod(selectors.triggers_visible_to)
    row_for = staticmethod(selectors.trigger_for)

    @extend_schema(request=TriggerCreateSerializer, responses={201: TriggerWithSecretSerializer})
    def create(self, request):
        data = TriggerCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        agent = agent_for(request.user, request.organization, values["agent_id"])
        if agent is None:
            raise Http404
        trigger, secret = services.trigger_create(
            actor=request.user,
            organization=request.organization,
            agent=agent,
            kind=values["kind"],
            name=values["name"],
            prompt=values["prompt"],
            schedule=values.get("schedule"),
            run_as_creator=values["run_as_creator"],
        )
        body = TriggerWithSecretSerializer(trigger).data
        body["secret"] = secret
        return Response(body, status=status.HTTP_201_CREATED)

    def perform_destroy(self, instance):
        services.trigger_delete(actor=self.request.user, trigger=instance)

    @extend_schema(request=None, responses={200: TriggerSerializer})
    @action(detail=True, methods=["post"])
    def pause(self, request, pk=None):
        trigger = services.trigger_pause(actor=request.user, trigger=self.get_object())
        return Response(TriggerSerializer(trigger).data)

    @extend_schema(request=None, responses={200: TriggerSerializer})
    @action(detail=True, methods=["post"])
    def resume(self, request, pk=None):
        trigger = services.trigger_resume(actor=request.user, trigger=self.get_object())
        return Response(TriggerSerializer(trigger).data)

    @extend_schema(request=None, responses={202: TriggerFireSerializer})
    @action(detail=True, methods=["post"])
    def fire(self, request, pk=None):
        trigger = self.get_object()
        with transaction.atomic():
            fire = services.trigger_fire(
                trigger_id=trigger.pk, via=FireVia.MANUAL, actor=request.user
            )
            services.enqueue_drive(fire)
        return Response(TriggerFireSerializer(fire).data, status=status.HTTP_202_ACCEPTED)

    @extend_schema(request=None, responses={200: TriggerWithSecretSerializer})
    @action(detail=True, methods=["post"], url_path="rotate-secret")
    def rotate_secret(self, request, pk=None):
        trigger = self.get_object()
        secret = services.trigger_rotate_secret(actor=request.user, trigger=trigger)
        body = TriggerWithSecretSerializer(trigger).data
        body["secret"] = secret
        return Response(body)

    @extend_schema(responses={200: TriggerFireSerializer(many=True)})
    @action(detail=True, methods=["get"])
    def fires(self, request, pk=None):
        page = self.paginate_queryset(selectors.fires_of(self.get_object()))
        return self.get_paginated_response(TriggerFireSerializer(page, many=True).data)


class RawBodyParser(BaseParser):
    """Any media type: the signature is over the bytes as sent, so nothing parses them first."""

    media_type = "*/*"

    def parse(self, stream, media_type=None, parser_context=None):
        return None


REFUSED = "The event's signature does not verify against this trigger's secret."
REPLAYED = "This signed event was already accepted; a signed event starts one run, once."
# Either the AgenticOS pair or GitHub's header signs an event; none is required on its own.
SIGNATURE_HEADERS = [
    OpenApiParameter(
        "X-AgenticOS-Signature",
        str,
        OpenApiParameter.HEADER,
        description='`sha256=<hex HMAC-SHA256 of "<timestamp>.<body>">` with the trigger\'s secret.',
    ),
    OpenApiParameter(
        "X-AgenticOS-Timestamp",
        str,
        OpenApiParameter.HEADER,
        description="Unix seconds; at most TRIGGER_EVENT_TOLERANCE_SECONDS old.",
    ),
    OpenApiParameter(
        "X-Hub-Signature-256",
        str,
        OpenApiParameter.HEADER,
        description="GitHub's: `sha256=<hex HMAC-SHA256 of the body>`.",
    ),
]


class TriggerEventView(APIView):
    """`POST /triggers/{id}/events/`: an event for an event trigger. The raw body is signed with
    the trigger's own secret: `X-AgenticOS-Signature: sha256=<hex HMAC-SHA256 of
    "<timestamp>.<body>">` with `X-AgenticOS-Timestamp` (unix seconds, at most
    TRIGGER_EVENT_TOLERANCE_SECONDS old), or GitHub's `X-Hub-Signature-256: sha256=<hex HMAC of
    the body>`, each exactly `sha256=` and 64 lower-case hex digits. No other authentication. A
    bad, stale, malformed or missing signature — or an id that is not an event trigger — is the
    same 403, and no run is created. A signed event already accepted (the same signature, whatever
    `X-GitHub-Delivery` says) is a 409. Answers 202 with the run id; the body is handed to the
    run's prompt as data."""

    authentication_classes: list = []
    permission_classes: list = []
    parser_classes = [RawBodyParser]

    @extend_schema(
        # The body is signed as sent and handed to the run as data: a JSON webhook's object, or
        # any bytes (exactly as signed). The parser takes every media type; these two are the
        # ones a generated client can send.
        request={
            "application/json": OpenApiTypes.OBJECT,
            "application/octet-stream": OpenApiTypes.BINARY,
        },
        parameters=SIGNATURE_HEADERS,
        responses={
            202: EventAcceptedSerializer,
            403: OpenApiResponse(response=ErrorSerializer, description="Not signed by it."),
            # A path whose id is not a number matches no route: the router's 404, before any
            # trigger is looked at (an unknown numeric id is the same 403 as a bad signature).
            404: OpenApiResponse(response=ErrorSerializer, description="Not an event path."),
            409: OpenApiResponse(
                response=ErrorSerializer, description="The trigger is paused, or a replay."
            ),
            413: OpenApiResponse(response=ErrorSerializer, description="Body too large."),
        },
    )
    def post(self, request, pk: int):
        too_large = Response(
            {"detail": f"An event body is at most {settings.TRIGGER_EVENT_MAX_BYTES} bytes."},
            status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE,
        )
        try:
            body = request.body
        except RequestDataTooBig:
            # Over DATA_UPLOAD_MAX_MEMORY_SIZE, Django refuses to read it at all: the same 413.
            return too_large
        if len(body) > settings.TRIGGER_EVENT_MAX_BYTES:
            return too_large
        trigger = selectors.trigger_for_event(pk)
        if trigger is None or trigger.secret is None:
            raise PermissionDenied(REFUSED)
        try:
            verified = signing.verify(secret_reveal(trigger.secret), body, request.META)
        except signing.SignatureRefused as refused:
            logger.info("trigger %s: event refused (%s)", trigger.pk, refused.reason)
            raise PermissionDenied(REFUSED) from None
        try:
            with transaction.atomic():
                fire = services.trigger_fire(
                    trigger_id=trigger.pk,
                    via=FireVia.EVENT,
                    event_body=body.decode("utf-8", errors="replace"),
                    delivery_id=verified.delivery_id,
                )
                services.enqueue_drive(fire)
        except services.EventReplayed:
            # The signature verified, so whoever sends it learns nothing new from a 409: either
            # the sender retrying a delivery whose answer it lost, or someone replaying a copy.
            logger.info("trigger %s: replayed event refused", trigger.pk)
            raise Conflict(REPLAYED) from None
        if fire.outcome == FireOutcome.REFUSED:
            raise Conflict(fire.detail or "The trigger did not fire.")
        return Response(
            {"run_id": fire.run_id, "fire_id": fire.pk}, status=status.HTTP_202_ACCEPTED
        )
