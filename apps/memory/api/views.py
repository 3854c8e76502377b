"""Context files over the API (``/api/v1/context/``): parse, call a service, shape.

Any member who can see agents reads them; changing them needs ``context:edit``. A file of another
organization is a 404 with the same body as an id that never existed.
"""

from __future__ import annotations

from django.http import Http404
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import status, viewsets
from rest_framework.response import Response

from agenticos.params import ID_PATH_PATTERN
from apps.memory import selectors, services
from apps.orgs import permissions as perms

from .serializers import (
    ContextFileListSerializer,
    ContextFileSerializer,
    ContextFileWriteSerializer,
)

FILE_ID = OpenApiParameter("id", int, OpenApiParameter.PATH, description="The file's id.")


@extend_schema_view(
    list=extend_schema(responses={200: ContextFileListSerializer(many=True)}),
    retrieve=extend_schema(parameters=[FILE_ID], responses={200: ContextFileSerializer}),
    create=extend_schema(
        request=ContextFileWriteSerializer, responses={201: ContextFileSerializer}
    ),
    update=extend_schema(
        parameters=[FILE_ID],
        request=ContextFileWriteSerializer,
        responses={200: ContextFileSerializer},
    ),
    partial_update=extend_schema(
        parameters=[FILE_ID],
        request=ContextFileWriteSerializer,
        responses={200: ContextFileSerializer},
    ),
    destroy=extend_schema(parameters=[FILE_ID], responses={204: None}),
)
class ContextFileViewSet(viewsets.ViewSet):
    # Path ids are ASCII digits: "5 ", "²" and "abc" do not route (a 404 like a missing id).
    lookup_value_regex = ID_PATH_PATTERN
    required_permission = {
        "GET": perms.AGENTS_VIEW,
        "HEAD": perms.AGENTS_VIEW,
        "OPTIONS": perms.AGENTS_VIEW,
        "*": perms.CONTEXT_EDIT,
    }
    serializer_class = ContextFileSerializer

    def _get(self, pk) -> object:
        context_file = selectors.context_file_for(self.request.organization, pk)
        if context_file is None:
            raise Http404
        return context_file

    def list(self, request):
        rows = selectors.context_files_for(request.organization)
        return Response(ContextFileListSerializer(rows, many=True).data)

    def retrieve(self, request, pk=None):
        return Response(ContextFileSerializer(self._get(pk)).data)

    def create(self, request):
        data = ContextFileWriteSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        context_file = services.context_file_create(
            actor=request.user, organization=request.organization, **data.validated_data
        )
        return Response(
            ContextFileSerializer(
                selectors.context_file_for(request.organization, context_file.pk)
            ).data,
            status=status.HTTP_201_CREATED,
        )

    def _change(self, request, pk, *, partial: bool):
        context_file = self._get(pk)
        data = ContextFileWriteSerializer(data=request.data, partial=partial)
        data.is_valid(raise_exception=True)
        services.context_file_update(
            actor=request.user, context_file=context_file, **data.validated_data
        )
        return Response(
            ContextFileSerializer(selectors.context_file_for(request.organization, pk)).data
        )

    def update(self, request, pk=None):
        return self._change(request, pk, partial=False)

    def partial_update(self, request, pk=None):
        return self._change(request, pk, partial=True)

    def destroy(self, request, pk=None):
        services.context_file_delete(actor=request.user, context_file=self._get(pk))
        return Response(status=status.HTTP_204_NO_CONTENT)
