"""Every write of MCP connections: create, update (a rotated token included), list tools, delete.

Who may write: an organization connection needs ``settings:manage``; a personal connection is its
owner's alone (any member who may run agents can keep their own). Each write is audited in its
own transaction (``mcp.connection.create`` / ``.update`` / ``.tools_listed`` / ``.delete``), and a
token is sealed in the vault (purpose ``mcp``), never stored, logged or audited in the clear.

A bearer token typed while an app admin impersonates is refused with a 403, for an organization
connection as much as a personal one: sealed under the vault it speaks as the account behind it
for every agent bound to the connection, long after the impersonation's hour ends. What an admin
may still do for the account is configuration without a secret — a name, a URL, the tool list —
and clearing a stored token, which keeps nothing.
"""

from __future__ import annotations

import re

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.utils import timezone

from apps.audit.context import current_impersonator
from apps.audit.impersonation import ImpersonationRefused
from apps.audit.services import record_audit
from apps.orgs.permissions import AGENTS_RUN, SETTINGS_MANAGE, has_org_permission
from apps.outbound.addresses import Refused, check_url
from apps.vault.services import connection_token_delete, connection_token_put, secret_reveal

from . import client
from .choices import Scope, Transport
from .models import McpConnection

PREFIX_RE = re.compile(r"^[a-z][a-z0-9_]{0,39}$")
NAME_MAX = 100
URL_MAX = 500
TOKEN_MAX = 8192
UNSET = object()

IMPERSONATION_REFUSAL = (
    "A bearer token cannot be typed while impersonating: sealed in the vault it would speak as "
    "this account for every agent bound to the connection after the impersonation ends. The "
    "account's owner (or an admin acting as themselves) types it."
)


def may_manage(user, connection: McpConnection) -> bool:
    if connection.owner_id is None:
        return has_org_permission(user, connection.organization, SETTINGS_MANAGE)
    return getattr(user, "pk", None) == connection.owner_id


def may_create(user, organization, scope: str) -> bool:
    if scope == Scope.ORGANIZATION:
        return has_org_permission(user, organization, SETTINGS_MANAGE)
    return has_org_permission(user, organization, AGENTS_RUN)


def default_prefix(name: str) -> str:
    prefix = re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")
    if not prefix:
        return "mcp"
    if not prefix[0].isalpha():
        prefix = f"mcp_{prefix}"
    return prefix[:40].rstrip("_")


def _refuse_token_while_impersonating() -> None:
    if current_impersonator.get() is not None:
        raise ImpersonationRefused(IMPERSONATION_REFUSAL)


def _clean_name(name) -> str:
    name = (name or "").strip() if isinstance(name, str) else ""
    if not name:
        raise ValidationError({"name": "a connection needs a name"})
    if len(name) > NAME_MAX:
        raise ValidationError({"name": f"at most {NAME_MAX} characters"})
    return name


def _clean_prefix(prefix) -> str:
    if not isinstance(prefix, str) or not PREFIX_RE.match(prefix):
        raise ValidationError(
            {
                "prefix": "1–40 lower-case letters, digits or _, starting with a letter (every "
                "tool of the connection reaches the model as <prefix>_<tool>)"
            }
        )
    return prefix


def _clean_url(url) -> str:
    url = (url or "").strip() if isinstance(url, str) else ""
    if not url:
        raise ValidationError({"url": "a connection needs the server's URL"})
    if len(url) > URL_MAX:
        raise ValidationError({"url": f"at most {URL_MAX} characters"})
    if "@" in url.split("//", 1)[-1].split("/", 1)[0]:
        # Credentials in the URL would be stored, shown and audited in the clear.
        raise ValidationError(
            {"url": "no user name or password in the URL: type the token in the token field"}
        )
    try:
        check_url(url)
    except Refused as exc:
        raise ValidationError({"url": exc.sentence}) from None
    return url


def _clean_transport(transport) -> str:
    if transport not in Transport.values:
        raise ValidationError({"transport": f"one of {', '.join(Transport.values)}"})
    return transport


def _clean_token(token) -> str:
    if not isinstance(token, str) or not token.strip():
        raise ValidationError({"token": "must not be empty (clear it instead)"})
    if len(token) > TOKEN_MAX:
        raise ValidationError({"token": f"at most {TOKEN_MAX} characters"})
    return token.strip()


def _name_taken(organization, owner, name: str, *, exclude_pk=None) -> bool:
    rows = McpConnection.objects.filter(organization=organization, name=name, owner=owner)
    if exclude_pk is not None:
        rows = rows.exclude(pk=exclude_pk)
    return rows.exists()


def connection_create(
    *,
    actor,
    organization,
    name: str,
    url: str,
    scope: str = Scope.ORGANIZATION,
    transport: str = Transport.STREAMABLE_HTTP,
    prefix: str | None = None,
    token: str | None = None,
) -> McpConnection:
    if scope not in Scope.values:
        raise ValidationError({"scope": f"one of {', '.join(Scope.values)}"})
    if not may_create(actor, organization, scope):
        needed = SETTINGS_MANAGE if scope == Scope.ORGANIZATION else AGENTS_RUN
        raise PermissionDenied(f"{needed} is required")
    if token:
        _refuse_token_while_impersonating()
        token = _clean_token(token)
    name = _clean_name(name)
    prefix = _clean_prefix(prefix if prefix else default_prefix(name))
    transport = _clean_transport(transport)
    url = _clean_url(url)  # resolves the host: before the transaction opens
    owner = actor if scope == Scope.PERSONAL else None
    with transaction.atomic():
        if _name_taken(organization, owner, name):
            raise ValidationError({"name": f"there is already a connection named {name!r}"})
        connection = McpConnection.objects.create(
            organization=organization,
            owner=owner,
            name=name,
            prefix=prefix,
            url=url,
            transport=transport,
            created_by=actor,
        )
        if token:
            connection.token_secret = connection_token_put(
                actor=actor, organization=organization, secret=None, label=name, value=token
            )
            connection.save(update_fields=["token_secret"])
        record_audit(
            actor=actor,
            organization=organization,
            action="mcp.connection.create",
            subject=connection,
            details={
                "name": name,
                "scope": connection.scope,
                "url": url,
                "transport": transport,
                "prefix": prefix,
                "token": "set" if token else "none",
            },
        )
    return connection


def connection_update(
    *,
    actor,
    connection: McpConnection,
    name=UNSET,
    url=UNSET,
    transport=UNSET,
    prefix=UNSET,
    token=UNSET,
    clear_token: bool = False,
) -> McpConnection:
    """Change what was given; a new ``token`` rotates the sealed one (audited like any change)."""
    if not may_manage(actor, connection):
        raise PermissionDenied("you may not change this connection")
    if token is not UNSET and token is not None:
        _refuse_token_while_impersonating()
        token = _clean_token(token)
        if clear_token:
            raise ValidationError({"clear_token": "either type a new token or clear it, not both"})
    changes: dict[str, str] = {}
    if name is not UNSET:
        changes["name"] = _clean_name(name)
    if prefix is not UNSET:
        changes["prefix"] = _clean_prefix(prefix)
    if transport is not UNSET:
        changes["transport"] = _clean_transport(transport)
    if url is not UNSET:
        changes["url"] = _clean_url(url)
    changes = {k: v for k, v in changes.items() if getattr(connection, k) != v}
    with transaction.atomic():
        row = McpConnection.objects.select_for_update().get(pk=connection.pk)
        if "name" in changes and _name_taken(
            row.organization, row.owner, changes["name"], exclude_pk=row.pk
        ):
            raise ValidationError(
                {"name": f"there is already a connection named {changes['name']!r}"}
            )
        token_change = None
        if token is not UNSET and token is not None:
            row.token_secret = connection_token_put(
                actor=actor,
                organization=row.organization,
                secret=row.token_secret,
                label=changes.get("name", row.name),
                value=token,
            )
            token_change = "rotated" if connection.token_secret_id else "set"
        elif clear_token and row.token_secret is not None:
            connection_token_delete(actor=actor, secret=row.token_secret)
            row.token_secret = None
            token_change = "cleared"
        if not changes and token_change is None:
            return row
        for field, value in changes.items():
            setattr(row, field, value)
        row.save(update_fields=[*changes, "token_secret", "updated_at"])
        details: dict[str, object] = {"name": row.name, "changed": sorted(changes)}
        for field in ("url", "transport", "prefix"):
            if field in changes:
                details[field] = changes[field]
        if token_change is not None:
            # A rotated token leaves the same trail as any other change (never its value).
            details["token"] = token_change
        record_audit(
            actor=actor,
            organization=row.organization,
            action="mcp.connection.update",
            subject=row,
            details=details,
        )
    return row


def connection_delete(*, actor, connection: McpConnection) -> None:
    if not may_manage(actor, connection):
        raise PermissionDenied("you may not delete this connection")
    with transaction.atomic():
        record_audit(
            actor=actor,
            organization=connection.organization,
            action="mcp.connection.delete",
            subject=connection,
            details={"name": connection.name, "scope": connection.scope, "url": connection.url},
        )
        secret = connection.token_secret
        connection.delete()
        if secret is not None:
            connection_token_delete(actor=actor, secret=secret)


def server_access(connection: McpConnection, *, fixed: bool = True, **extra) -> client.ServerAccess:
    """What the client needs to reach ``connection``'s server (the token revealed from the vault)."""
    return client.ServerAccess(
        connection_id=connection.pk,
        name=connection.name,
        url=connection.url,
        transport=connection.transport,
        token=secret_reveal(connection.token_secret) if connection.token_secret else None,
        prefix=connection.prefix,
        tool_names=tuple(connection.tool_names) if fixed else None,
        **extra,
    )


def connection_test(*, actor, connection: McpConnection) -> list[dict]:
    """Connect and list the server's tools without changing anything; ``McpUnreachable`` says
    why not. No write, so nothing is audited."""
    if not may_manage(actor, connection):
        raise PermissionDenied("you may not test this connection")
    return client.list_tools(server_access(connection, fixed=False))


def connection_list_tools(*, actor, connection: McpConnection) -> McpConnection:
    """List the server's tools and fix them on the connection: from now on every agent bound to
    it is offered exactly these. The network call happens before the transaction opens."""
    if not may_manage(actor, connection):
        raise PermissionDenied("you may not refresh this connection")
    tools = client.list_tools(server_access(connection, fixed=False))
    with transaction.atomic():
        row = McpConnection.objects.select_for_update().get(pk=connection.pk)
        before = set(row.tool_names)
        row.tools = tools
        row.tools_listed_at = timezone.now()
        row.save(update_fields=["tools", "tools_listed_at", "updated_at"])
        after = set(row.tool_names)
        record_audit(
            actor=actor,
            organization=row.organization,
            action="mcp.connection.tools_listed",
            subject=row,
            details={
                "name": row.name,
                "tool_count": len(after),
                "added": sorted(after - before),
                "removed": sorted(before - after),
            },
        )
    return row
