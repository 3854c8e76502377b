from django.apps import AppConfig


class OrgsConfig(AppConfig):
    """Organizations, memberships and roles, the permission catalog, API keys, impersonation."""

    name = "apps.orgs"
    label = "orgs"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from axes.signals import user_locked_out

        user_locked_out.connect(_audit_lockout, dispatch_uid="orgs.audit_lockout")


def _audit_lockout(sender, request=None, username=None, ip_address=None, **kwargs) -> None:
    # django-axes announces a lockout with this signal; the trail records it (a service call).
    from .services import login_lockout_record

    login_lockout_record(username=username or "", ip_address=ip_address)
