"""The vault over the API: write-only. A value goes in and never comes back out."""

from drf_spectacular.utils import extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from agenticos.params import ID_PATH_PATTERN
from apps.audit.impersonation import refuse_while_impersonating
from apps.orgs.permissions import SETTINGS_MANAGE
from apps.vault import selectors, services
from apps.vault.models import Secret

from .serializers import SecretCreateSerializer, SecretRotateSerializer, SecretSerializer


class SecretViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """`GET` lists the organization's secrets (name, purpose, a four-character hint); `POST`
    stores one; `POST {id}/rotate/` replaces its value; `DELETE` removes one no model profile
    uses. `settings:manage`. Refused while an app admin impersonates: a credential typed then
    would outlive the impersonation's hour under someone else's name."""

    # Path ids are ASCII digits: "5 ", "²" and "abc" do not route (a 404 like a missing id).
    lookup_value_regex = ID_PATH_PATTERN

    serializer_class = SecretSerializer
    queryset = Secret.objects.none()  # the schema's model; get_queryset scopes the reads
    required_permission = SETTINGS_MANAGE

    def get_queryset(self):
        return selectors.secrets_for(self.request.organization)

    @extend_schema(request=SecretCreateSerializer, responses={201: SecretSerializer})
    def create(self, request):
        refuse_while_impersonating(request)
        data = SecretCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        secret = services.secret_create(
            actor=request.user, organization=request.organization, **data.validated_data
        )
        return Response(SecretSerializer(secret).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=SecretRotateSerializer, responses={200: SecretSerializer})
    @action(detail=True, methods=["post"])
    def rotate(self, request, pk=None):
        refuse_while_impersonating(request)
        data = SecretRotateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        secret = services.secret_rotate(
            actor=request.user, secret=self.get_object(), **data.validated_data
        )
        return Response(SecretSerializer(secret).data)

    def destroy(self, request, pk=None):
        services.secret_delete(actor=request.user, secret=self.get_object())
        return Response(status=status.HTTP_204_NO_CONTENT)
