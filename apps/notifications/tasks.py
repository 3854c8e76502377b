"""The daily usage-report job (declared in agenticos/schedule.py) and the budget warning, which
a booking that crosses a cap's threshold hands to :func:`enqueue_budget_warning` (registered with
``apps.spend.services.on_budget_threshold_crossed`` in this app's ready())."""

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


def enqueue_budget_warning(warning) -> None:
    """A booking crossed a cap's warning threshold (apps.spend's BudgetWarning): send it from a
    worker, off the run's request path."""
    send_budget_warning.apply_async(
        kwargs={
            "counter_id": warning.counter_id,
            "fractions": [str(f) for f in warning.fractions],
            "spent_usd": str(warning.spent_usd),
            "limit_usd": str(warning.limit_usd),
        },
        retry=False,
    )
