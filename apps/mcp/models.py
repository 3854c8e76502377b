"""An MCP connection: a server someone connected, and the tools it exposes, fixed on the row."""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from .choices import Scope, Transport


class McpConnection(models.Model):
    """A server an organization connected (``owner`` null), or one member did (``owner`` set).

    ``tools`` is the list the server gave the last time someone listed it (``tools_listed_at``):
    every agent bound to the connection is offered exactly those tools, under ``prefix``; a tool
    the server added since is not offered until someone refreshes the list. The optional bearer
    token is a vault secret (purpose ``mcp``), sealed per connection and never shown again.
    """

    organization = models.ForeignKey(
        "orgs.Organization", on_delete=models.CASCADE, related_name="mcp_connections"
    )
    # A personal connection's owner; null for the organization's shared connection.
    owner = models.ForeignKey(
        "orgs.User",
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="mcp_connections",
    )
    name = models.CharField(max_length=100)
    # Every tool of this connection reaches the model as ``<prefix>_<tool>``.
    prefix = models.CharField(max_length=40)
    url = models.URLField(max_length=500)
    transport = models.CharField(
        max_length=20, choices=Transport.choices, default=Transport.STREAMABLE_HTTP
    )
    token_secret = models.ForeignKey(
        "vault.Secret", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    # [{"name", "description", "input_schema"}], as the server listed them.
    tools = models.JSONField(default=list, blank=True)
    tools_listed_at = models.DateTimeField(null=True, blank=True)
    created_by = models.ForeignKey(
        "orgs.User", on_delete=models.SET_NULL, null=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name", "pk"]
        constraints = [
            # One name per organization among its shared connections, and one per member among
            # theirs: the console and the Builder tell connections apart by name.
            models.UniqueConstraint(
                fields=["organization", "name"],
                condition=Q(owner__isnull=True),
                name="mcp_org_connection_name_unique",
            ),
            models.UniqueConstraint(
                fields=["organization", "owner", "name"],
                condition=Q(owner__isnull=False),
                name="mcp_personal_connection_name_unique",
            ),
        ]
        indexes = [
            # The connections a member may see: the organization's and their own.
            models.Index(fields=["organization", "owner"], name="mcp_connection_org_owner"),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def scope(self) -> str:
        return Scope.ORGANIZATION if self.owner_id is None else Scope.PERSONAL

    @property
    def tool_names(self) -> list[str]:
        return [tool["name"] for tool in self.tools or []]

    def prefixed(self, tool_name: str) -> str:
        return f"{self.prefix}_{tool_name}"
