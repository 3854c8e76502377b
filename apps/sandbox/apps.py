from django.apps import AppConfig


class SandboxConfig(AppConfig):
    """Sandbox: workspaces, their backends and the sandbox capability's tools (see the package
    docstring for why this is its own app)."""

    name = "apps.sandbox"
    label = "sandbox"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # The capability is declared in the registry (apps/capabilities/catalog/analysis.py); it is
        # available exactly when its builder is registered, and its builder lives here because
        # the capabilities app may not import the app that owns workspaces.
        from apps.capabilities.implementations import register_toolset

        from .toolset import build_sandbox_toolset

        register_toolset("sandbox", build_sandbox_toolset)
