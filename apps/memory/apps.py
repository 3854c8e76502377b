from django.apps import AppConfig


class MemoryConfig(AppConfig):
    """Memory: what the organization and its agents know between runs — today the organization's
    context files (seed 000, "Contexto"); memory notes and the mem0 binding join it later."""

    name = "apps.memory"
    label = "memory"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from apps.agents.validation import register_spec_check

        from .validation import check_context_ids

        register_spec_check(check_context_ids)
