"""System checks: bad configuration is caught at start, not at the first request."""

from __future__ import annotations

import base64
import binascii

from django.conf import settings
from django.core.checks import Error, Warning, register


@register()
def check_configuration(app_configs, **kwargs):
    problems = []
    unknown = sorted(set(settings.REVOKED_SCOPES) - set(settings.ALL_SCOPES))
    if unknown:
        problems.append(
            Error(
                f"AGENTICOS_REVOKED_SCOPES names unknown scopes: {', '.join(unknown)}",
                hint=f"Known scopes: {', '.join(settings.ALL_SCOPES)}",
                id="agenticos.E001",
            )
        )
    try:
        key = base64.urlsafe_b64decode(settings.AGENTICOS_VAULT_KEY.encode())
        if len(key) != 32:
            raise ValueError
    except (binascii.Error, ValueError):
        problems.append(
            Error(
                "AGENTICOS_VAULT_KEY must be 32 bytes, urlsafe-base64 encoded (a Fernet key)",
                hint='python -c "from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())"',
                id="agenticos.E002",
            )
        )
    if settings.SERVICES_UNCONFIGURED:
        problems.append(
            Warning(
                "DATABASE_URL / REDIS_URL are unset and no `agenticos up` is running",
                hint="Start `make run` (embedded services) or set DATABASE_URL and REDIS_URL.",
                id="agenticos.W001",
            )
        )
    return problems
