"""Tool approvals: the gate's policy, parking, the queue, decisions, the expiry sweeps, a chat
session's approval mode, and questions to the person (``ask_user``).

Its own app because a decision is governance with its own audit trail and its own readers (the
queue, the API, the admin, the export); the runner only calls the hooks in ``gate.py`` and
``parking.py``.
"""

from django.apps import AppConfig


class ApprovalsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "apps.approvals"
    label = "approvals"
    verbose_name = "Approvals"

    def ready(self) -> None:
        from .gate import register_ask_user_toolset

        register_ask_user_toolset()
