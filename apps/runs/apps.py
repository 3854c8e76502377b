from django.apps import AppConfig


class RunsConfig(AppConfig):
    """Conversations, messages, runs and their transcript; the runner and its Celery tasks."""

    name = "apps.runs"
    label = "runs"
    default_auto_field = "django.db.models.BigAutoField"
