from django.apps import AppConfig


class McpConfig(AppConfig):
    """MCP connections: servers someone connected, whose tools agents bind by connection id.

    Its own app rather than part of ``capabilities``: a capability is code registered in this
    deployment, while a connection is a row an organization (or one member) owns, with a URL, a
    vault token, a fixed tool list, its own permissions and its own audit trail. ``capabilities``
    is the registry's ground floor and imports no product app; connections need the vault and the
    audit log, and ``agents`` (publish validation) and ``runs`` (assembly) read them from above.
    """

    name = "apps.mcp"
    label = "mcp"
    default_auto_field = "django.db.models.BigAutoField"
