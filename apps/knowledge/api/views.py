"""Knowledge over the API (``/api/v1/knowledge/``): parse, call a service, shape.

Reading needs ``agents:view`` and the collection's grant when it is restricted; every change
needs ``context:edit``. A collection or document of another organization — or a restricted
collection the caller may not read — is a 404 with the same body as an id that never existed.
"""

from __future__ import annotations

from django.conf import settings
from django.http import Http404
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import status, viewsets
from rest_framework.decorators import action
from rest_framework.parsers import FormParser, JSONParser, MultiPartParser
from rest_framework.response import Response

from agenticos.params import ID_PATH_PATTERN
from apps.orgs import permissions as perms
from apps.orgs.models import User

from .. import selectors, services
from .serializers import (
    CollectionGrantSerializer,
    CollectionSerializer,
    CollectionWriteSerializer,
    DocumentSerializer,
    DocumentUploadSerializer,
    SkillSerializer,
    SkillWriteSerializer,
)

COLLECTION_ID = OpenApiParameter("id", int, OpenApiParameter.PATH, description="The collection.")
PARENT_ID = OpenApiParameter(
    "collection_id", int, OpenApiParameter.PATH, description="The collection."
)
DOCUMENT_ID = OpenApiParameter("id", int, OpenApiParameter.PATH, description="The document.")

_PERMISSIONS = {
    "GET": perms.AGENTS_VIEW,
    "HEAD": perms.AGENTS_VIEW,
    "OPTIONS": perms.AGENTS_VIEW,
    "*": perms.CONTEXT_EDIT,
}


def _collection(request, pk):
    collection = selectors.collection_for(request.user, request.organization, pk)
    if collection is None:
        raise Http404
    return collection


@extend_schema_view(
    list=extend_schema(responses={200: CollectionSerializer(many=True)}),
    retrieve=extend_schema(parameters=[COLLECTION_ID], responses={200: CollectionSerializer}),
    create=extend_schema(request=CollectionWriteSerializer, responses={201: CollectionSerializer}),
    destroy=extend_schema(parameters=[COLLECTION_ID], responses={204: None}),
)
class CollectionViewSet(viewsets.ViewSet):
    lookup_value_regex = ID_PATH_PATTERN
    required_permission = _PERMISSIONS
    serializer_class = CollectionSerializer

    def list(self, request):
        rows = selectors.collections_readable_by(request.user, request.organization)
        return Response(CollectionSerializer(rows, many=True).data)

    def retrieve(self, request, pk=None):
        return Response(CollectionSerializer(_collection(request, pk)).data)

    def create(self, request):
        data = CollectionWriteSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = dict(data.validated_data)
        profile = None
        profile_id = values.pop("embedding_profile_id")
        if profile_id is not None:
            from apps.agents.selectors import model_profiles_for

            profile = model_profiles_for(request.organization).filter(pk=profile_id).first()
            if profile is None:
                from django.core.exceptions import ValidationError

                raise ValidationError({"embedding_profile_id": ["No such model profile."]})
        collection = services.collection_create(
            actor=request.user,
            organization=request.organization,
            embedding_profile=profile,
            **values,
        )
        return Response(
            CollectionSerializer(_collection(request, collection.pk)).data,
            status=status.HTTP_201_CREATED,
        )

    def destroy(self, request, pk=None):
        services.collection_delete(actor=request.user, collection=_collection(request, pk))
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(
        parameters=[COLLECTION_ID], request=CollectionGrantSerializer, responses={204: None}
    )
    @action(detail=True, methods=["post"])
    def grants(self, request, pk=None):
        collection = _collection(request, pk)
        data = CollectionGrantSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        user = User.objects.filter(pk=data.validated_data["user_id"]).first()
        if user is None:
            from django.core.exceptions import ValidationError

            raise ValidationError({"user_id": ["Not a member of this organization."]})
        services.collection_grant(actor=request.user, collection=collection, user=user)
        return Response(status=status.HTTP_204_NO_CONTENT)


@extend_schema_view(
    list=extend_schema(parameters=[PARENT_ID], responses={200: DocumentSerializer(many=True)}),
    retrieve=extend_schema(
        parameters=[PARENT_ID, DOCUMENT_ID], responses={200: DocumentSerializer}
    ),
    create=extend_schema(
        parameters=[PARENT_ID],
        request={"multipart/form-data": DocumentUploadSerializer},
        responses={201: DocumentSerializer},
    ),
    destroy=extend_schema(parameters=[PARENT_ID, DOCUMENT_ID], responses={204: None}),
)
class DocumentViewSet(viewsets.ViewSet):
    """A collection's documents: ``POST`` a multipart ``file`` (answers the document, status
    ``queued``); ``GET`` one to follow its status and progress."""

    lookup_value_regex = ID_PATH_PATTERN
    required_permission = _PERMISSIONS
    serializer_class = DocumentSerializer
    parser_classes = [MultiPartParser, FormParser, JSONParser]

    def _document(self, request, collection_id, pk):
        document = selectors.document_for(_collection(request, collection_id), pk)
        if document is None:
            raise Http404
        return document

    def list(self, request, collection_id=None):
        rows = selectors.documents_of(_collection(request, collection_id))
        return Response(DocumentSerializer(rows, many=True).data)

    def retrieve(self, request, collection_id=None, pk=None):
        return Response(DocumentSerializer(self._document(request, collection_id, pk)).data)

    def create(self, request, collection_id=None):
        collection = _collection(request, collection_id)
        data = DocumentUploadSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        upload = data.validated_data["file"]
        document = services.document_upload(
            actor=request.user,
            collection=collection,
            file_name=upload.name,
            # Never more than one byte past the limit read: the service refuses by the size.
            data=upload.read(settings.KNOWLEDGE_MAX_UPLOAD_BYTES + 1),
            size_bytes=upload.size,
            org_unit=data.validated_data["org_unit"],
        )
        return Response(
            DocumentSerializer(selectors.document_for(collection, document.pk)).data,
            status=status.HTTP_201_CREATED,
        )

    def destroy(self, request, collection_id=None, pk=None):
        services.document_delete(
            actor=request.user, document=self._document(request, collection_id, pk)
        )
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(
        parameters=[PARENT_ID, DOCUMENT_ID], request=None, responses={200: DocumentSerializer}
    )
    @action(detail=True, methods=["post"])
    def reindex(self, request, collection_id=None, pk=None):
        document = services.document_reindex(
            actor=request.user, document=self._document(request, collection_id, pk)
        )
        return Response(DocumentSerializer(document).data)


SKILL_ID = OpenApiParameter("id", int, OpenApiParameter.PATH, description="The skill.")

_SKILL_PERMISSIONS = {
    "GET": perms.AGENTS_VIEW,
    "HEAD": perms.AGENTS_VIEW,
    "OPTIONS": perms.AGENTS_VIEW,
    "*": perms.SKILLS_EDIT,
}


def _skill(request, pk):
    skill = selectors.skill_for(request.organization, pk)
    if skill is None:
        raise Http404
    return skill


@extend_schema_view(
    list=extend_schema(responses={200: SkillSerializer(many=True)}),
    retrieve=extend_schema(parameters=[SKILL_ID], responses={200: SkillSerializer}),
    create=extend_schema(request=SkillWriteSerializer, responses={201: SkillSerializer}),
    update=extend_schema(
        parameters=[SKILL_ID], request=SkillWriteSerializer, responses={200: SkillSerializer}
    ),
    partial_update=extend_schema(
        parameters=[SKILL_ID], request=SkillWriteSerializer, responses={200: SkillSerializer}
    ),
    destroy=extend_schema(parameters=[SKILL_ID], responses={204: None}),
)
class SkillViewSet(viewsets.ViewSet):
    """The organization's skills: reading needs ``agents:view``, every change ``skills:edit``."""

    lookup_value_regex = ID_PATH_PATTERN
    required_permission = _SKILL_PERMISSIONS
    serializer_class = SkillSerializer

    def list(self, request):
        return Response(SkillSerializer(selectors.skills_of(request.organization), many=True).data)

    def retrieve(self, request, pk=None):
        return Response(SkillSerializer(_skill(request, pk)).data)

    def create(self, request):
        data = SkillWriteSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        skill = services.skill_create(
            actor=request.user, organization=request.organization, **data.validated_data
        )
        return Response(SkillSerializer(skill).data, status=status.HTTP_201_CREATED)

    def _write(self, request, pk, *, partial: bool):
        skill = _skill(request, pk)
        data = SkillWriteSerializer(data=request.data, partial=partial)
        data.is_valid(raise_exception=True)
        skill = services.skill_update(actor=request.user, skill=skill, **data.validated_data)
        return Response(SkillSerializer(skill).data)

    def update(self, request, pk=None):
        return self._write(request, pk, partial=False)

    def partial_update(self, request, pk=None):
        return self._write(request, pk, partial=True)

    def destroy(self, request, pk=None):
        services.skill_delete(actor=request.user, skill=_skill(request, pk))
        return Response(status=status.HTTP_204_NO_CONTENT)
