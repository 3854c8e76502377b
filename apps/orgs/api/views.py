"""Organizations, memberships and API keys over the API: parse, call a service, shape."""

from __future__ import annotations

from django.conf import settings
from django.http import Http404
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import PermissionDenied
from rest_framework.generics import get_object_or_404
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response

from agenticos.params import ID_PATH_PATTERN
from apps.orgs import permissions as perms
from apps.orgs import selectors, services
from apps.orgs.api.exceptions import Conflict, Gone
from apps.orgs.api.schema import ErrorSerializer
from apps.orgs.models import ApiKey, Invitation, Membership, Organization

from .serializers import (
    ApiKeyCreatedSerializer,
    ApiKeyCreateSerializer,
    ApiKeySerializer,
    InvitationAcceptSerializer,
    InvitationSentSerializer,
    InvitationSerializer,
    MembershipCreateSerializer,
    MembershipSerializer,
    MembershipUpdateSerializer,
    OrganizationSerializer,
    OrganizationUpdateSerializer,
)

_UNSET = ...
ORGANIZATION_FIELD_PERMISSIONS = (
    perms.SETTINGS_MANAGE,
    perms.BUDGETS_MANAGE,
    perms.APPROVALS_DECIDE,
)


class OrganizationViewSet(
    mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet
):
    """The caller's organization. `PATCH` changes its name (settings:manage), monthly cap
    (budgets:manage; null = no cap), `budget_warn_at` (budgets:manage: the fractions of the cap,
    default 0.80 and 0.95, at which the admins are warned) or `chat_may_waive_approvals`
    (approvals:decide)."""

    # Path ids are ASCII digits: "5 ", "²" and "abc" do not route (a 404 like a missing id).
    lookup_value_regex = ID_PATH_PATTERN

    serializer_class = OrganizationSerializer
    queryset = Organization.objects.none()  # the schema's model; get_queryset scopes the reads

    def get_queryset(self):
        # Only the organization the request acts in: another one is a 404 like a missing id.
        return selectors.organizations_for_user(self.request.user).filter(
            pk=self.request.organization.pk
        )

    def retrieve(self, request, *args, **kwargs):
        """The organization with its monthly cap and — for a reader with runs:view — its month
        to date against it (`month`, `month_to_date_usd`, `month_to_date_is_partial`): the same
        figure the Spend page and the Dashboard print, and the guard's counter."""
        organization = self.get_object()
        return Response(
            {
                **OrganizationSerializer(organization).data,
                **services.organization_figures(organization, request.user),
            }
        )

    @extend_schema(request=OrganizationUpdateSerializer, responses={200: OrganizationSerializer})
    def partial_update(self, request, pk=None):
        organization = get_object_or_404(self.get_queryset(), pk=pk)
        # Permission before the body: each field has its own permission (checked by the
        # service), and a caller holding none of them is refused before anything is parsed.
        if not any(
            perms.has_org_permission(request.user, organization, permission)
            for permission in ORGANIZATION_FIELD_PERMISSIONS
        ):
            raise PermissionDenied(
                f"one of {', '.join(ORGANIZATION_FIELD_PERMISSIONS)} is required"
            )
        data = OrganizationUpdateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        organization = services.organization_update(
            actor=request.user,
            organization=organization,
            name=values.get("name"),
            monthly_budget_usd=values.get("monthly_budget_usd", _UNSET),
            chat_may_waive_approvals=values.get("chat_may_waive_approvals"),
            budget_warn_at=values.get("budget_warn_at"),
        )
        return Response(OrganizationSerializer(organization).data)


class MembershipViewSet(viewsets.GenericViewSet, mixins.ListModelMixin, mixins.RetrieveModelMixin):
    # Path ids are ASCII digits: "5 ", "²" and "abc" do not route (a 404 like a missing id).
    lookup_value_regex = ID_PATH_PATTERN
    serializer_class = MembershipSerializer
    queryset = Membership.objects.none()  # the schema's model; get_queryset scopes the reads
    required_permission = perms.MEMBERS_MANAGE

    def get_queryset(self):
        return selectors.memberships_for(self.request.organization)

    @extend_schema(request=MembershipCreateSerializer, responses={202: InvitationSentSerializer})
    def create(self, request):
        """Invite an address (members:manage). Nobody joins without accepting: the address gets
        an e-mail with a link, and becomes a member when its owner accepts, signed in. The answer
        is 202 and the same whether the address has an account or not (no id, no name)."""
        data = MembershipCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        invitation, _token = services.invitation_create(
            actor=request.user, organization=request.organization, **data.validated_data
        )
        return Response(_invitation_sent(invitation), status=status.HTTP_202_ACCEPTED)

    @extend_schema(request=MembershipUpdateSerializer, responses={200: MembershipSerializer})
    def partial_update(self, request, pk=None):
        membership = self.get_object()
        data = MembershipUpdateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        membership = services.membership_change_role(
            actor=request.user, membership=membership, **data.validated_data
        )
        return Response(MembershipSerializer(membership).data)

    def destroy(self, request, pk=None):
        services.membership_remove(actor=request.user, membership=self.get_object())
        return Response(status=status.HTTP_204_NO_CONTENT)


def _invitation_sent(invitation: Invitation) -> dict:
    return InvitationSentSerializer(
        {
            "email": invitation.email,
            "role": invitation.role,
            "status": "invited",
            "detail": services.INVITED_SENTENCE.format(
                email=invitation.email,
                role=invitation.get_role_display(),
                days=settings.INVITATION_EXPIRY_DAYS,
            ),
        }
    ).data


class InvitationViewSet(viewsets.GenericViewSet, mixins.ListModelMixin, mixins.RetrieveModelMixin):
    """Invitations to the organization (members:manage): `POST` invites an address (the same as
    `POST /memberships/`), `GET` lists them with their `status` (`pending`, `expired`,
    `accepted`, `revoked`), `{id}/revoke/` withdraws an open one. `accept/` is the invited
    person's: `{"token"}` from the e-mail's link, signed in as the invited address."""

    lookup_value_regex = ID_PATH_PATTERN
    serializer_class = InvitationSerializer
    queryset = Invitation.objects.none()  # the schema's model; get_queryset scopes the reads
    required_permission = perms.MEMBERS_MANAGE

    def get_queryset(self):
        return selectors.invitations_for(self.request.organization)

    @extend_schema(request=MembershipCreateSerializer, responses={202: InvitationSentSerializer})
    def create(self, request):
        data = MembershipCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        invitation, _token = services.invitation_create(
            actor=request.user, organization=request.organization, **data.validated_data
        )
        return Response(_invitation_sent(invitation), status=status.HTTP_202_ACCEPTED)

    @extend_schema(
        request=None,
        responses={
            200: InvitationSerializer,
            409: OpenApiResponse(response=ErrorSerializer, description="No longer open."),
        },
    )
    @action(detail=True, methods=["post"])
    def revoke(self, request, pk=None):
        try:
            invitation = services.invitation_revoke(
                actor=request.user, invitation=self.get_object()
            )
        except services.InvitationClosed as closed:
            raise Conflict(str(closed)) from None
        return Response(InvitationSerializer(invitation).data)

    @extend_schema(
        request=InvitationAcceptSerializer,
        responses={
            200: MembershipSerializer,
            409: OpenApiResponse(response=ErrorSerializer, description="Already accepted."),
            410: OpenApiResponse(response=ErrorSerializer, description="Expired."),
        },
    )
    @action(detail=False, methods=["post"], permission_classes=[IsAuthenticated])
    def accept(self, request):
        """Accept an invitation as the signed-in person (no organization needed: you are not a
        member yet). A token that is not yours, revoked or unknown is the same 404."""
        data = InvitationAcceptSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            membership = services.invitation_accept(
                actor=request.user, token=data.validated_data["token"]
            )
        except services.InvitationNotFound:
            raise Http404 from None
        except services.InvitationClosed as closed:
            raise (Gone if closed.expired else Conflict)(str(closed)) from None
        return Response(MembershipSerializer(membership).data)


class ApiKeyViewSet(viewsets.GenericViewSet, mixins.ListModelMixin, mixins.RetrieveModelMixin):
    """Your API keys (every key of the organization with members:manage). The key itself is in
    the creation response only."""

    # Path ids are ASCII digits: "5 ", "²" and "abc" do not route (a 404 like a missing id).
    lookup_value_regex = ID_PATH_PATTERN

    serializer_class = ApiKeySerializer
    queryset = ApiKey.objects.none()  # the schema's model; get_queryset scopes the reads

    def get_queryset(self):
        return selectors.api_keys_visible_to(self.request.user, self.request.organization)

    @extend_schema(request=ApiKeyCreateSerializer, responses={201: ApiKeyCreatedSerializer})
    def create(self, request):
        data = ApiKeyCreateSerializer(data=request.data, context={"request": request})
        data.is_valid(raise_exception=True)
        api_key, raw_key = services.api_key_create(
            actor=request.user,
            organization=request.organization,
            user=request.user,
            name=data.validated_data["name"],
            expires_at=data.validated_data.get("expires_at"),
        )
        return Response(
            {**ApiKeySerializer(api_key).data, "key": raw_key}, status=status.HTTP_201_CREATED
        )

    @extend_schema(request=None, responses={200: ApiKeySerializer})
    @action(detail=True, methods=["post"])
    def revoke(self, request, pk=None):
        api_key = services.api_key_revoke(actor=request.user, api_key=self.get_object())
        return Response(ApiKeySerializer(api_key).data)
