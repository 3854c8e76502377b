"""The daily usage-report job (declared in agenticos/schedule.py) and the budget warning, which
a booking that crosses a cap's threshold enqueues by name (apps.spend.services)."""

from celery import shared_task
from django.utils import timezone

from agenticos.schedule import single_flight

from .services import notify_budget_warning, send_due_usage_reports


@shared_task(name="apps.notifications.tasks.send_usage_reports", ignore_result=True)
def send_usage_reports() -> int:
    with single_flight("usage-reports", ttl_seconds=3600) as mine:
        if not mine:
            return 0
        return send_due_usage_reports(timezone.now().date())


@shared_task(name="apps.notifications.tasks.send_budget_warning", ignore_result=True, max_retries=0)
def send_budget_warning(*, counter_id: int, fractions, spent_usd: str, limit_usd: str) -> int:
    return notify_budget_warning(
        counter_id=counter_id, fractions=fractions, spent_usd=spent_usd, limit_usd=limit_usd
    )
