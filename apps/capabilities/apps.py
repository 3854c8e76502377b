from django.apps import AppConfig


class CapabilitiesConfig(AppConfig):
    name = "apps.capabilities"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # The tools of the capabilities built so far register their toolset builders with the
        # runner; a capability without a builder is listed as unbuilt in a prepared run.
        from .tools import register_toolsets

        register_toolsets()
