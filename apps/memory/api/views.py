"""The memory app over the API: parse, call a service, shape.

Context files (``/api/v1/context/``): any member who can see agents reads them; changing them
needs ``context:edit``. A file of another organization is a 404 with the same body as an id that
never existed. A person's memory (``/api/v1/memory/person/{id}/``): read by deployment
administrators only, audited without content; erased by the person or by ``members:manage``.
"""

from __future__ import annotations

from django.http import Http404
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import status, viewsets
from rest_framework.response import Response
from rest_framework.views import APIView

from agenticos.params import ID_PATH_PATTERN, parse_text, raise_errors
from apps.memory import selectors, services
from apps.memory.erasure import agents_bound_to_mem0, memory_erase_person
from apps.memory.models import ContextFile
from apps.memory.services import MemoryErasureIncomplete
from apps.orgs import permissions as perms
from apps.orgs.api.exceptions import UnprocessableEntity
from apps.orgs.api.permissions import (
    ORGANIZATION_HEADER,
    OrganizationPermission,
    request_organization,
    resolve_request_organization,
)

from .serializers import (
    ContextFileListSerializer,
    ContextFileSerializer,
    ContextFileWriteSerializer,
    MemoryErasedSerializer,
    MemoryPersonSerializer,
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

    def _get(self, pk) -> ContextFile:
        context_file = selectors.context_file_for(request_organization(self.request), pk)
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


# --- memory of a person --------------------------------------------------------------------------


class DeploymentAdminOnly(OrganizationPermission):
    """Reading another person's memory is for the deployment's own administrators (Django
    superusers): an organization role is not the party a person's access request goes to, and an
    Owner, an Admin or a grant on the agent that wrote a note is refused like anyone else."""

    message = "Only a deployment administrator may read another person's memory."

    def has_permission(self, request, view) -> bool:
        if not request.user or not request.user.is_authenticated:
            return False
        if not request.user.is_superuser:
            return False
        if request.auth is None and ORGANIZATION_HEADER not in request.META:
            raise UnprocessableEntity(
                {"X-Organization-Id": ["name the tenant whose memory store you are reading"]}
            )
        request.organization = resolve_request_organization(request)
        if request.organization is None:
            raise Http404
        return True


PERSON_ID = OpenApiParameter("id", int, OpenApiParameter.PATH, description="The person's user id.")


class MemoryPersonView(APIView):
    """`GET /memory/person/{id}/?reason=…`: every note agents of the tenant (named with
    `X-Organization-Id`) keep about a person, for a deployment administrator only. The read is
    audited with the actor, the tenant, the subject and the reason — never the content, which would
    be a second copy of what is protected."""

    permission_classes = [DeploymentAdminOnly]

    @extend_schema(
        parameters=[
            PERSON_ID,
            OpenApiParameter("reason", str, required=True, description="Why it is read."),
        ],
        responses={200: MemoryPersonSerializer},
    )
    def get(self, request, pk=None):
        errors: dict[str, list[str]] = {}
        reason = parse_text("reason", request.query_params.get("reason"), errors)
        if not errors and not (reason or "").strip():
            errors["reason"] = ["say why this person's memory is being read"]
        raise_errors(errors)
        person = selectors.memory_subject(request.organization, pk)
        if person is None:
            raise Http404
        notes = services.memory_person_admin_read(
            actor=request.user, organization=request.organization, person=person, reason=reason
        )
        return Response(
            MemoryPersonSerializer(
                {
                    "person_id": person.pk,
                    "organization_id": request.organization.pk,
                    "notes": notes,
                    "mem0_agents": [a.name for a in agents_bound_to_mem0(request.organization)],
                }
            ).data
        )


class MemoryPersonEraseView(APIView):
    """`POST /memory/person/{id}/erase/`: erase everything agents of this organization remember
    about a person — the person themselves, or someone with `members:manage` for another. A mem0
    space that cannot be reached (a provider failing, a key missing) is a 409 naming it, after
    the rows here are gone: restore access and repeat to complete the erasure."""

    @extend_schema(parameters=[PERSON_ID], request=None, responses={200: MemoryErasedSerializer})
    def post(self, request, pk=None):
        person = selectors.memory_subject(request.organization, pk)
        if person is None:
            raise Http404
        try:
            erased = memory_erase_person(
                actor=request.user, organization=request.organization, person=person
            )
        except MemoryErasureIncomplete as incomplete:
            return Response(
                {"detail": str(incomplete), "failures": incomplete.failures},
                status=status.HTTP_409_CONFLICT,
            )
        return Response(MemoryErasedSerializer(erased).data)
