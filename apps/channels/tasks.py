"""Celery tasks of chat channels: ids in, call a service. None retries: a message that was
handled (a run started, a link sent) must not be handled twice, and the platform's own retries
are already deduplicated at the edge."""

from __future__ import annotations

from celery import shared_task

from . import services


@shared_task(
    name="apps.channels.tasks.handle_message", acks_late=True, ignore_result=True, max_retries=0
)
def handle_message(message_id: int) -> str:
    """What the webhook enqueues: decide what the message gets, and drive its run here (relayed
    into its thread) when it started one."""
    message = services.message_handle(message_id)
    services.message_drive(message)
    return message.outcome


@shared_task(name=services.ANNOUNCE_TASK, ignore_result=True, max_retries=0)
def announce_in_thread(message_id: int, text: str) -> None:
    """Say something in a message's thread outside a run's segment (a parked run expired)."""
    services.thread_announce(message_id, text)
