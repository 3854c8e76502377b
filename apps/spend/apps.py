from django.apps import AppConfig


class SpendConfig(AppConfig):
    """The priced ledger, the budget guard, pricing and the spend aggregates."""

    name = "apps.spend"
    label = "spend"
    default_auto_field = "django.db.models.BigAutoField"
