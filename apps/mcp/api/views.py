"""MCP connections over the API: ``/api/v1/mcp/connections/``.

A member reads the organization's connections and their own personal ones; another member's
personal connection is a 404 like another organization's. Writing an organization connection
needs ``settings:manage``; a personal one is its owner's. A token typed while impersonating is a
403 (the service refuses it, so the console is covered by the same rule).
"""

from drf_spectacular.utils import extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound
from rest_framework.response import Response

from agenticos.params import ID_PATH_PATTERN
from apps.mcp import selectors, services
from apps.mcp.client import McpUnreachable
from apps.mcp.models import McpConnection

from .serializers import (
    McpConnectionCreateSerializer,
    McpConnectionSerializer,
    McpConnectionUpdateSerializer,
    McpTestResultSerializer,
)


class McpConnectionViewSet(
    mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet
):
    """`GET` lists the connections you may use (the organization's and your own); `POST` adds one
    (`scope` organization needs settings:manage, personal is yours); `PATCH` changes it (a new
    `token` rotates the sealed one, `clear_token` removes it); `DELETE` removes it;
    `POST {id}/tools/` lists the server's tools and fixes them on the connection;
    `POST {id}/test/` connects and lists without changing anything."""

    lookup_value_regex = ID_PATH_PATTERN
    serializer_class = McpConnectionSerializer
    queryset = McpConnection.objects.none()  # the schema's model; get_queryset scopes the reads

    def get_queryset(self):
        return selectors.connections_visible_to(self.request.user, self.request.organization)

    @extend_schema(request=McpConnectionCreateSerializer, responses={201: McpConnectionSerializer})
    def create(self, request):
        data = McpConnectionCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        connection = services.connection_create(
            actor=request.user, organization=request.organization, **data.validated_data
        )
        return Response(McpConnectionSerializer(connection).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=McpConnectionUpdateSerializer, responses={200: McpConnectionSerializer})
    def partial_update(self, request, pk=None):
        data = McpConnectionUpdateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        connection = services.connection_update(
            actor=request.user, connection=self.get_object(), **data.validated_data
        )
        return Response(McpConnectionSerializer(connection).data)

    def destroy(self, request, pk=None):
        services.connection_delete(actor=request.user, connection=self.get_object())
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(request=None, responses={200: McpConnectionSerializer})
    @action(detail=True, methods=["post"])
    def tools(self, request, pk=None):
        try:
            connection = services.connection_list_tools(
                actor=request.user, connection=self.get_object()
            )
        except McpUnreachable as exc:
            return Response({"detail": exc.plain}, status=status.HTTP_502_BAD_GATEWAY)
        return Response(McpConnectionSerializer(connection).data)

    @extend_schema(request=None, responses={200: McpTestResultSerializer})
    @action(detail=True, methods=["post"])
    def test(self, request, pk=None):
        try:
            tools = services.connection_test(actor=request.user, connection=self.get_object())
        except McpUnreachable as exc:
            return Response({"ok": False, "error": exc.plain, "tools": []})
        return Response({"ok": True, "error": "", "tools": tools})

    def get_object(self):
        connection = selectors.connection_visible_to(
            self.request.user, self.request.organization, self.kwargs["pk"]
        )
        if connection is None:
            raise NotFound
        return connection
