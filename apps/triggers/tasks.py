"""Celery tasks of triggers: ids in, call a service. None retries: a fire that was refused or
failed waits for the next one (a retry every beat would be a bill, or an alert, that never stops)."""

from __future__ import annotations

from celery import shared_task

from . import services
from .choices import FireVia


@shared_task(name="apps.triggers.tasks.fire_scheduled_trigger", ignore_result=True, max_retries=0)
def fire_scheduled_trigger(trigger_id: int) -> str:
    """What beat sends for a schedule trigger: start the fire and drive its run here."""
    fire = services.trigger_fire(trigger_id=trigger_id, via=FireVia.SCHEDULE)
    return services.fire_drive(fire.pk).outcome


@shared_task(
    name="apps.triggers.tasks.drive_fire", acks_late=True, ignore_result=True, max_retries=0
)
def drive_fire_task(fire_id: int) -> str:
    """An event's (or "Fire now"'s) run, driven by a worker after the request answered."""
    return services.fire_drive(fire_id).outcome
