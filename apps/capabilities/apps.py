from django.apps import AppConfig


class CapabilitiesConfig(AppConfig):
    name = "apps.capabilities"
    default_auto_field = "django.db.models.BigAutoField"
