"""Runs over the API: start one, read it, cancel it. Parse, call a service, shape."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from apps.agents.models import Agent
from apps.orgs import permissions as perms
from apps.runs import selectors, services

from .serializers import RunCreateSerializer, RunSerializer


class RunViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """`POST` starts a run (`agents:run`) and answers it `queued`; `GET` reads runs you may see
    (every run with `runs:view`, else your own); `POST {id}/cancel/` stops one."""

    serializer_class = RunSerializer
    required_permission = {"POST": perms.AGENTS_RUN}

    def get_queryset(self):
        runs = selectors.runs_visible_to(self.request.user, self.request.organization)
        if self.action == "list":
            runs = runs.filter(parent_run__isnull=True)
        return runs.order_by("-created_at")

    def create(self, request):
        data = RunCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        agent = get_object_or_404(Agent.objects.filter(organization=request.organization), pk=values["agent_id"])
        conversation = None
        if values.get("conversation_id") is not None:
            conversation = get_object_or_404(
                selectors.conversations_visible_to(request.user, request.organization), pk=values["conversation_id"]
            )
        run = services.run_create(
            actor=request.user,
            organization=request.organization,
            agent=agent,
            input=values["input"],
            conversation=conversation,
        )
        return Response(RunSerializer(run).data, status=status.HTTP_201_CREATED)

    @action(detail=True, methods=["post"], url_path="cancel")
    def cancel(self, request, pk=None):
        run = services.run_cancel(actor=request.user, run=self.get_object())
        return Response(RunSerializer(run).data)
