"""The chat's thumbs: the reader's own rating of a turn, drawn server-side."""

from django import template

from apps.ratings.models import MessageRating

register = template.Library()


@register.filter
def thumb_of(message_id, user) -> str:
    """``up``, ``down`` or "" — the person's rating of the turn (one small indexed lookup)."""
    if not message_id or not getattr(user, "is_authenticated", False):
        return ""
    return (
        MessageRating.objects.filter(message_id=message_id, user_id=user.pk)
        .values_list("thumb", flat=True)
        .first()
        or ""
    )
