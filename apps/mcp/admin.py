from django.contrib import admin

from agenticos.admin_base import ReadOnlyAdmin

from .models import McpConnection


@admin.register(McpConnection)
class McpConnectionAdmin(ReadOnlyAdmin):
    """Read-only: a connection is written through its services (Settings → Connections, the API),
    where each change is audited and a token typed while impersonating is refused."""

    list_display = ["name", "organization", "owner", "transport", "url", "tools_listed_at"]
    list_filter = ["transport", "organization"]
    search_fields = ["name", "url", "organization__name", "owner__email"]
    exclude = ["tools"]
    readonly_fields = ["token_secret"]
