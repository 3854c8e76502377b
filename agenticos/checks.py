"""System checks: bad configuration is caught at start, not at the first request."""

from __future__ import annotations

import base64
import binascii

from django.conf import settings
from django.core.checks import Error, Warning, register

from apps.outbound import allowlist as outbound_allowlist


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
    for problem in outbound_allowlist.problems(settings.OUTBOUND_ALLOW):
        problems.append(
            Error(
                f"OUTBOUND_ALLOW: {problem}",
                hint=(
                    "Entries are HOST or HOST:PORT, comma-separated: a DNS name (gpu.internal), "
                    "an IPv4 address or network (10.0.0.5, 10.0.8.0/24) or an IPv6 one in "
                    "brackets ([fd00::5]). Until it is fixed the entry allows nothing."
                ),
                id="agenticos.E010",
            )
        )
    for name in settings.RETIRED_OUTBOUND_SETTINGS:
        problems.append(
            Warning(
                f"{name} is no longer read: its hosts are not allowed",
                hint="List them in OUTBOUND_ALLOW (docs/security.md, Where the product dials).",
                id="agenticos.W010",
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
