from django.apps import AppConfig


class ConsoleConfig(AppConfig):
    """The server-rendered console: the shell (navigation, org switcher), the dashboard and the
    settings pages. Product pages live in their own apps and extend console/base.html."""

    name = "apps.console"
    label = "console"

    def ready(self) -> None:
        from agenticos import checks  # noqa: F401  (registers the system checks)
