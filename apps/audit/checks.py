"""System checks of the audit app (registered in AuditConfig.ready)."""

from __future__ import annotations

from django.conf import settings
from django.core import checks

MIDDLEWARE_PATH = "apps.audit.middleware.ImpersonationMiddleware"
AUTHENTICATION = "django.contrib.auth.middleware.AuthenticationMiddleware"


@checks.register(checks.Tags.security)
def impersonation_middleware_installed(app_configs=None, **kwargs):
    """Without the middleware, entries written during an impersonation would not name the admin."""
    middleware = list(settings.MIDDLEWARE)
    if MIDDLEWARE_PATH not in middleware:
        return [
            checks.Warning(
                f"{MIDDLEWARE_PATH} is not in MIDDLEWARE: impersonation cannot start and audit "
                "entries will not record a client address.",
                hint=f"Add it right after {AUTHENTICATION}.",
                id="audit.W001",
            )
        ]
    if AUTHENTICATION in middleware and middleware.index(MIDDLEWARE_PATH) < middleware.index(
        AUTHENTICATION
    ):
        return [
            checks.Error(
                f"{MIDDLEWARE_PATH} must come after {AUTHENTICATION}: it reads the signed-in app admin.",
                id="audit.E001",
            )
        ]
    return []
