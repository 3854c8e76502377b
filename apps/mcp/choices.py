from django.db import models


class Transport(models.TextChoices):
    """How the client speaks to the server (both are pydantic-ai's MCP client over fastmcp)."""

    STREAMABLE_HTTP = "streamable_http", "Streamable HTTP"
    SSE = "sse", "Server-sent events (SSE)"


class Scope(models.TextChoices):
    """Who a connection belongs to: the organization, or one member (``owner``)."""

    ORGANIZATION = "organization", "Organization"
    PERSONAL = "personal", "Personal"
