from django.apps import AppConfig


class AgentsConfig(AppConfig):
    """Agents, drafts, published versions (frozen specs), model profiles, publish validation,
    the AgenticOS template agent and triggers."""

    name = "apps.agents"
    label = "agents"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from apps.orgs.services import on_organization_setup

        from .services import ensure_template_agent

        # orgs is a leaf and imports no product app; agents hands it the hook instead.
        on_organization_setup(ensure_template_agent)
