"""The API's default permission: a signed-in member of the request's organization who holds the
view's ``required_permission`` (a string, or a dict from HTTP method to permission)."""

from __future__ import annotations

from typing import Any

from django.http import Http404
from rest_framework import permissions

from agenticos import params as parsing
from apps.orgs.models import ApiKey, Organization
from apps.orgs.permissions import has_org_permission
from apps.orgs.selectors import organization_for_user

from .exceptions import UnprocessableEntity

ORGANIZATION_HEADER = "HTTP_X_ORGANIZATION_ID"


def resolve_request_organization(request):
    """The organization an API request acts in.

    A key carries its own organization. A session names one with ``X-Organization-Id``, else acts
    in the console's current organization. An organization the caller cannot see is a 404, the
    same as one that does not exist.
    """
    if isinstance(request.auth, ApiKey):
        return request.auth.organization
    header = request.META.get(ORGANIZATION_HEADER)
    if header is not None:
        errors: dict[str, list[str]] = {}
        organization_id = parsing.parse_id("X-Organization-Id", header, errors)
        if organization_id is None:
            raise UnprocessableEntity(
                {"X-Organization-Id": ["must be an organization id (an integer)"]}
            )
        organization = organization_for_user(request.user, organization_id)
        if organization is None:
            raise Http404
        return organization
    return getattr(request._request, "organization", None)


def request_organization(request: Any) -> Organization:
    """The organization ``OrganizationPermission`` set on this API request. A view behind that
    permission always has one (the permission answers 404 without), so this is the typed way to
    read it: DRF's Request declares no such attribute."""
    return request.organization


class OrganizationPermission(permissions.BasePermission):
    message = "You do not have permission to do this in this organization."

    def has_permission(self, request, view) -> bool:
        if not request.user or not request.user.is_authenticated:
            return False
        organization = resolve_request_organization(request)
        request.organization = organization
        if organization is None:
            raise Http404
        required = getattr(view, "required_permission", None)
        if isinstance(required, dict):
            required = required.get(request.method, required.get("*"))
        if required is None:
            # No named permission: membership of the organization is enough.
            return request.user.is_superuser or organization.role_of(request.user) is not None
        self.message = f"{required} is required."
        return has_org_permission(request.user, organization, required)
