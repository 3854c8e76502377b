from django.apps import AppConfig


class AuditConfig(AppConfig):
    """The audit log: a hash chain per organization (plus one for the deployment), the
    terminal checkpoints kept outside the database, `audit-verify`, impersonation and exports.

    A leaf app: it imports `orgs` and nothing else of the product, so every other app can call
    `apps.audit.services.record_audit` without an import cycle.
    """

    name = "apps.audit"
    label = "audit"
    default_auto_field = "django.db.models.BigAutoField"
    verbose_name = "Audit"

    def ready(self) -> None:
        from . import checks  # noqa: F401  (registers the system checks)
