"""Reads of organizations, memberships and API keys, scoped to what the caller may see."""

from __future__ import annotations

from django.db.models import QuerySet

from agenticos.params import as_id

from .models import ApiKey, Invitation, Membership, Organization, User
from .permissions import MEMBERS_MANAGE, has_org_permission


def organizations_for_user(user: User) -> QuerySet[Organization]:
    """The organizations a person belongs to. App admins see every organization."""
    if not user.is_authenticated:
        return Organization.objects.none()
    if user.is_superuser:
        return Organization.objects.all()
    return Organization.objects.filter(memberships__user=user)


def organization_for_user(user: User, organization_id) -> Organization | None:
    """The organization with that id if the person may act in it, else None (never a hint)."""
    organization_id = as_id(organization_id)
    if organization_id is None:
        return None
    return organizations_for_user(user).filter(pk=organization_id).first()


def default_organization_for_user(user: User) -> Organization | None:
    membership = (
        Membership.objects.filter(user=user)
        .select_related("organization")
        .order_by("created_at")
        .first()
    )
    if membership is not None:
        return membership.organization
    return organizations_for_user(user).order_by("pk").first()


def memberships_for(organization: Organization) -> QuerySet[Membership]:
    return (
        Membership.objects.filter(organization=organization)
        .select_related("user")
        .order_by("user__email")
    )


def members_of(organization: Organization) -> QuerySet[User]:
    """The people of one organization. A person outside it is not found, like an id that never
    existed: a lookup across the deployment would answer with their email address."""
    return User.objects.filter(memberships__organization=organization)


def api_keys_visible_to(user: User, organization: Organization) -> QuerySet[ApiKey]:
    """A person sees their own keys; members:manage sees every key of the organization."""
    keys = ApiKey.objects.filter(organization=organization).select_related("user")
    if has_org_permission(user, organization, MEMBERS_MANAGE):
        return keys
    return keys.filter(user=user)


def invitations_for(organization: Organization) -> QuerySet[Invitation]:
    """An organization's invitations, newest first (its members managers read them)."""
    return Invitation.objects.filter(organization=organization).select_related("invited_by")


def open_invitations_for(organization: Organization) -> QuerySet[Invitation]:
    """The invitations still waiting for an answer (expired ones included, marked so)."""
    return invitations_for(organization).filter(accepted_at__isnull=True, revoked_at__isnull=True)
