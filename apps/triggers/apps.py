from django.apps import AppConfig


class TriggersConfig(AppConfig):
    """Agents that run themselves: schedule triggers (a django-celery-beat entry) and event
    triggers (a signed webhook), each firing a run through the one runner.

    Its own app rather than a corner of ``apps.agents``: a trigger *starts runs*, so it imports
    ``apps.runs`` (run_create, the runner), and agents sits below runs (STYLE.md, "Which way the
    imports point"). Inside agents, firing would be an upward import; here it points down.
    """

    name = "apps.triggers"
    label = "triggers"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Registered in every process, not only a worker's: "Fire now" in a web request enqueues
        # the drive by its task name (services.enqueue_drive), without importing tasks.py.
        from . import tasks  # noqa: F401
