"""The one answer to "which organization does this console request act in, and may it?".

Every console view used to carry its own ``_organization(request)`` helper (thirteen of them,
three kinds of answer to a person outside a permission). They all call this function now, so a
page that needs a permission says which one on one line, and the refusal reads the same on
every page. ``request.organization`` itself is set by ``CurrentOrganizationMiddleware``; the API
resolves it in ``apps.orgs.api.permissions`` (a key carries its own organization).
"""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest

from .models import Organization, User
from .permissions import has_org_permission

NOT_A_MEMBER = "You are not a member of any organization yet."


def organization_from_request(
    request: HttpRequest, permission: str | None = None, *, hidden: bool = False
) -> Organization:
    """The request's organization, or a 404 for someone who belongs to none.

    With ``permission``, a member who lacks it is refused: a 403 naming the permission (the page
    exists and they may ask for the role), or with ``hidden=True`` a 404 like a missing page, for
    pages whose very existence is the organization's business.
    """
    organization = getattr(request, "organization", None)
    # The middleware sets an organization for signed-in people only, so a request that has one
    # has a User (the isinstance narrows the type; it refuses no one the check above let in).
    if organization is None or not isinstance(request.user, User):
        raise Http404(NOT_A_MEMBER)
    if permission is not None and not has_org_permission(request.user, organization, permission):
        if hidden:
            raise Http404(NOT_A_MEMBER)
        raise PermissionDenied(f"{permission} is required.")
    return organization
