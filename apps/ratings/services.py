"""Writing ratings: set (create or change) and clear, each audited."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import transaction

from apps.audit.services import record_audit
from apps.runs.choices import MessageRole

from .models import MessageRating, Thumb

MAX_COMMENT_CHARS = 2_000


@transaction.atomic
def rating_set(*, actor, message, thumb: str, comment: str = "") -> MessageRating:
    """``actor``'s thumb on an assistant turn they may read (the caller resolved the message
    through the reader's selector). One per person per turn: rating again changes it."""
    if thumb not in Thumb.values:
        raise ValidationError({"thumb": "must be up or down"})
    if message.role != MessageRole.ASSISTANT or message.run_id is None:
        raise ValidationError({"message_id": "only an assistant's answer can be rated"})
    comment = (comment or "").strip()
    if len(comment) > MAX_COMMENT_CHARS:
        raise ValidationError({"comment": f"at most {MAX_COMMENT_CHARS} characters"})
    rating, _ = MessageRating.objects.update_or_create(
        message=message,
        user=actor,
        defaults={
            "thumb": thumb,
            "comment": comment,
            "run_id": message.run_id,
            "organization_id": message.conversation.organization_id,
        },
    )
    record_audit(
        actor=actor,
        organization=message.conversation.organization,
        action="rating.set",
        subject=rating,
        details={"message_id": message.pk, "run_id": message.run_id, "thumb": thumb},
    )
    return rating


@transaction.atomic
def rating_clear(*, actor, message) -> None:
    deleted, _ = MessageRating.objects.filter(message=message, user=actor).delete()
    if deleted:
        record_audit(
            actor=actor,
            organization=message.conversation.organization,
            action="rating.clear",
            subject=("message", message.pk, f"message {message.pk}"),
            details={"message_id": message.pk, "run_id": message.run_id},
        )
