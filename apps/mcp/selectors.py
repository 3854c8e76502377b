"""Every read of MCP connections a person can reach: one scoped path.

A member sees the organization's connections and their own personal ones; another member's
personal connection is invisible (a 404, like one of another organization), whatever their role —
a personal token speaks as its owner, and nobody else's console should offer it.
"""

from __future__ import annotations

from django.db.models import Q, QuerySet

from .models import McpConnection


def connections_visible_to(user, organization) -> QuerySet[McpConnection]:
    if organization is None or not getattr(user, "is_authenticated", False):
        return McpConnection.objects.none()
    return (
        McpConnection.objects.filter(organization=organization)
        .filter(Q(owner__isnull=True) | Q(owner_id=user.pk))
        .select_related("token_secret", "owner")
    )


def connection_visible_to(user, organization, connection_id) -> McpConnection | None:
    return connections_visible_to(user, organization).filter(pk=connection_id).first()


def connections_by_id(organization_id: int, ids) -> dict[int, McpConnection]:
    """The organization's connections among ``ids`` (publish validation and run assembly: the
    spec names them; another organization's id is simply absent)."""
    rows = McpConnection.objects.filter(organization_id=organization_id, pk__in=list(ids))
    return {row.pk: row for row in rows.select_related("token_secret")}
