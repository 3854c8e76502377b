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
