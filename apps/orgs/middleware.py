"""Which organization a console request acts in."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest

from .models import Organization
from .selectors import default_organization_for_user, organization_for_user

SESSION_KEY = "organization_id"


class OrganizationRequest(HttpRequest):
    """A console request once this middleware has run: it carries the organization it acts in."""

    organization: Organization | None


class CurrentOrganizationMiddleware:
    """Sets ``request.organization`` for signed-in console requests.

    A link carrying ``org=<id>`` switches to that organization *before* the page loads its data,
    so a shared link shows what its sender saw. A person who is not (or no longer) a member of
    that organization is told the link is why they see their own organization instead.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: OrganizationRequest):
        request.organization = None
        user = getattr(request, "user", None)
        if user is not None and user.is_authenticated:
            request.organization = self._resolve(request, user)
        return self.get_response(request)

    def _resolve(self, request: HttpRequest, user):
        linked = request.GET.get("org")
        if linked is not None and not request.path.startswith("/api/"):
            organization = organization_for_user(user, linked)
            if organization is not None:
                request.session[SESSION_KEY] = organization.pk
                return organization
            messages.warning(
                request,
                "The link you followed belongs to an organization you are not a member of "
                "(perhaps you have left it), so this page shows your current organization instead.",
            )
        organization = organization_for_user(user, request.session.get(SESSION_KEY))
        if organization is None:
            organization = default_organization_for_user(user)
            if organization is not None:
                request.session[SESSION_KEY] = organization.pk
        return organization
