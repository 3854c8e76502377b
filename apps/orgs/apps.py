from django.apps import AppConfig


class OrgsConfig(AppConfig):
    """Organizations, memberships and roles, the permission catalog, API keys, impersonation."""

    name = "apps.orgs"
    label = "orgs"
    default_auto_field = "django.db.models.BigAutoField"
