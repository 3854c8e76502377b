"""The daily usage-report job (declared in agenticos/schedule.py)."""

from celery import shared_task
from django.utils import timezone

from agenticos.schedule import single_flight

from .services import send_due_usage_reports


@shared_task(name="apps.notifications.tasks.send_usage_reports", ignore_result=True)
def send_usage_reports() -> int:
    with single_flight("usage-reports", ttl_seconds=3600) as mine:
        if not mine:
            return 0
        return send_due_usage_reports(timezone.now().date())
