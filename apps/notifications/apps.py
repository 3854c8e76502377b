"""Alerts: e-mail (Django's backend; SMTP in production) plus an in-app notification.

Its own app because alerts are read by every other app (approvals park a run, budgets bind,
usage reports go out on a schedule) and none of them should own who is told, how a link is built,
or a person's opt-outs.
"""

from django.apps import AppConfig


class NotificationsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "apps.notifications"
    label = "notifications"
    verbose_name = "Notifications"

    def ready(self) -> None:
        # Importing the tasks registers them in every process (the budget warning's task is
        # enqueued wherever spend is booked).
        from apps.approvals.services import on_expiry_reminder
        from apps.runs.hooks import on_run_budget_refused, on_run_parked
        from apps.spend.services import on_budget_threshold_crossed

        from .services import notify_approval_expiring, notify_run_budget_refused, notify_run_parked
        from .tasks import enqueue_budget_warning

        # The hourly approval sweep reminds before it denies (APPROVAL_EXPIRY_WARNING_HOURS).
        on_expiry_reminder(notify_approval_expiring)
        # Runs sits below this app and announces through its hooks (docs/layers.md): a parked run
        # is the approvals alert, a refused one the "budget reached" alert.
        on_run_parked(notify_run_parked)
        on_run_budget_refused(notify_run_budget_refused)
        # A booking that crosses a cap's warning threshold: the warning goes out from a worker.
        on_budget_threshold_crossed(enqueue_budget_warning)
