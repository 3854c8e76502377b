"""Puts the request's impersonation and client address where record_audit finds them.

Must come after AuthenticationMiddleware: it reads the signed-in app admin, and while an
impersonation is in force it replaces ``request.user`` with the account being acted as, keeping
the admin on ``request.impersonator`` (and ``request.real_user``).
"""

from __future__ import annotations

from .context import current_impersonation_id, current_impersonator, current_ip_address
from .impersonation import SESSION_KEY, active_impersonation


class ImpersonationMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        request.impersonator = None
        request.impersonation = None
        request.real_user = getattr(request, "user", None)
        session = getattr(request, "session", None)
        # A request carrying its own credentials (an API key) acts as that key's owner, never
        # under the browser session's impersonation.
        bearer = "HTTP_AUTHORIZATION" in request.META
        if session is not None and SESSION_KEY in session and not bearer:
            impersonation = active_impersonation(session=session, real_user=request.user)
            if impersonation is not None:
                request.impersonator = impersonation.impersonator
                request.impersonation = impersonation
                request.user = impersonation.target
        tokens = (
            current_impersonator.set(request.impersonator),
            current_impersonation_id.set(getattr(request.impersonation, "pk", None)),
            current_ip_address.set(request.META.get("REMOTE_ADDR") or None),
        )
        try:
            return self.get_response(request)
        finally:
            current_impersonator.reset(tokens[0])
            current_impersonation_id.reset(tokens[1])
            current_ip_address.reset(tokens[2])
