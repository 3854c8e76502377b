from django.apps import AppConfig


class MemoryConfig(AppConfig):
    """Memory: what the organization and its agents know between runs — the organization's
    context files (seed 000, "Contexto"), the notes agents keep per person or group chat and who
    may reach them (``ownership``), the mem0 binding's scope, erasure and Settings → Memory."""

    name = "apps.memory"
    label = "memory"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from apps.agents.validation import register_spec_check

        from .validation import check_context_ids, check_mem0_base_url

        register_spec_check(check_context_ids)
        register_spec_check(check_mem0_base_url)
