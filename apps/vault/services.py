"""Writing and reading vault secrets. Values never reach a log, an audit entry or a response."""

from __future__ import annotations

from cryptography.fernet import Fernet, InvalidToken
from django.conf import settings
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.db.models import ProtectedError
from django.utils import timezone

from apps.audit.services import record_audit
from apps.orgs.permissions import SETTINGS_MANAGE, has_org_permission

from .models import Secret, SecretPurpose


class SecretUnreadable(Exception):
    """The ciphertext does not decrypt with the configured key (the key was changed)."""


def _fernet() -> Fernet:
    return Fernet(settings.AGENTICOS_VAULT_KEY.encode())


def _hint(value: str) -> str:
    return value[-4:] if len(value) >= 12 else ""


@transaction.atomic
def secret_create(*, actor, organization, name: str, purpose: str, value: str) -> Secret:
    if actor is not None and not has_org_permission(actor, organization, SETTINGS_MANAGE):
        raise PermissionDenied(f"{SETTINGS_MANAGE} is required")
    # An MCP token is sealed through its connection (connection_token_put), never on its own.
    if purpose not in SecretPurpose.values or purpose == SecretPurpose.MCP:
        purposes = ", ".join(p for p in SecretPurpose.values if p != SecretPurpose.MCP)
        raise ValidationError({"purpose": f"must be one of {purposes}"})
    if not value:
        raise ValidationError({"value": "must not be empty"})
    # One name per organization (the constraint secret_name_unique_per_org): said as a 422
    # naming the field, not left to the database as an IntegrityError.
    if Secret.objects.filter(organization=organization, name=name).exists():
        raise ValidationError({"name": f"{organization.name} already has a secret named {name!r}"})
    secret = Secret.objects.create(
        organization=organization,
        name=name,
        purpose=purpose,
        ciphertext=_fernet().encrypt(value.encode()),
        hint=_hint(value),
        created_by=actor,
    )
    record_audit(
        actor=actor,
        organization=organization,
        action="secret.create",
        subject=secret,
        details={"name": name, "purpose": purpose},
    )
    return secret


@transaction.atomic
def secret_rotate(*, actor, secret: Secret, value: str) -> Secret:
    if actor is not None and not has_org_permission(actor, secret.organization, SETTINGS_MANAGE):
        raise PermissionDenied(f"{SETTINGS_MANAGE} is required")
    if not value:
        raise ValidationError({"value": "must not be empty"})
    secret.ciphertext = _fernet().encrypt(value.encode())
    secret.hint = _hint(value)
    secret.rotated_at = timezone.now()
    secret.save(update_fields=["ciphertext", "hint", "rotated_at"])
    record_audit(
        actor=actor,
        organization=secret.organization,
        action="secret.rotate",
        subject=secret,
        details={"name": secret.name},
    )
    return secret


def secret_reveal(secret: Secret) -> str:
    """The plaintext, for the runner only. Callers keep it out of logs and frames."""
    try:
        return _fernet().decrypt(bytes(secret.ciphertext)).decode()
    except InvalidToken:
        raise SecretUnreadable(
            f"secret {secret.pk} does not decrypt with AGENTICOS_VAULT_KEY"
        ) from None


@transaction.atomic
def secret_delete(*, actor, secret: Secret) -> None:
    """Remove a secret; one a model profile still uses is refused (the profile would break)."""
    if actor is not None and not has_org_permission(actor, secret.organization, SETTINGS_MANAGE):
        raise PermissionDenied(f"{SETTINGS_MANAGE} is required")
    try:
        record_audit(
            actor=actor,
            organization=secret.organization,
            action="secret.delete",
            subject=secret,
            details={"name": secret.name, "purpose": secret.purpose},
        )
        secret.delete()
    except ProtectedError:
        raise ValidationError(
            {"secret": f"{secret.name} is used by a model profile; pick another key there first"}
        ) from None


# --- MCP connection tokens ----------------------------------------------------------------------
# Sealed per connection (purpose ``mcp``). The connection's service (apps.mcp.services) decides
# who may write one — an organization connection's admin, a personal connection's owner — and
# refuses a token typed while impersonating; these two only seal, rotate and audit the value.


@transaction.atomic
def connection_token_put(
    *, actor, organization, secret: Secret | None, label: str, value: str
) -> Secret:
    """Seal ``value`` as a connection's token: a new secret, or ``secret`` rotated."""
    if not value:
        raise ValidationError({"token": "must not be empty"})
    if secret is not None:
        secret.ciphertext = _fernet().encrypt(value.encode())
        secret.hint = _hint(value)
        secret.rotated_at = timezone.now()
        secret.save(update_fields=["ciphertext", "hint", "rotated_at"])
        action = "secret.rotate"
    else:
        name = f"MCP token: {label}"[:80]
        # Unique per organization (secret_name_unique_per_org): a suffix keeps two connections
        # with one name (two members' personal ones) apart.
        taken = set(
            Secret.objects.filter(organization=organization, name__startswith=name).values_list(
                "name", flat=True
            )
        )
        unique, n = name, 2
        while unique in taken:
            unique, n = f"{name} ({n})", n + 1
        secret = Secret.objects.create(
            organization=organization,
            name=unique,
            purpose=SecretPurpose.MCP,
            ciphertext=_fernet().encrypt(value.encode()),
            hint=_hint(value),
            created_by=actor,
        )
        action = "secret.create"
    record_audit(
        actor=actor,
        organization=organization,
        action=action,
        subject=secret,
        details={"name": secret.name, "purpose": SecretPurpose.MCP},
    )
    return secret


@transaction.atomic
def connection_token_delete(*, actor, secret: Secret) -> None:
    """Remove a connection's token (clearing it keeps nothing, so it is allowed to anyone who may
    edit the connection, impersonating or not)."""
    record_audit(
        actor=actor,
        organization=secret.organization,
        action="secret.delete",
        subject=secret,
        details={"name": secret.name, "purpose": secret.purpose},
    )
    secret.delete()
