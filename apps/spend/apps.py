from django.apps import AppConfig


class SpendConfig(AppConfig):
    """The priced ledger, the budget guard, pricing and the spend aggregates."""

    name = "apps.spend"
    label = "spend"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from apps.orgs.services import on_organization_figures

        from .aggregates import organization_month_figures

        # GET /orgs/{id} carries the month beside the cap (orgs reads no spend itself).
        on_organization_figures(organization_month_figures)
