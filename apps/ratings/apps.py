from django.apps import AppConfig


class RatingsConfig(AppConfig):
    """Thumbs up/down (and an optional comment) that people leave on an assistant turn:
    ``message_ratings``, the quality figures behind the dashboard, the ratings summary.

    Its own app so the runs app (conversations, messages) needs no migration for it and keeps
    importing nothing above itself: this app sits above runs and provides its table to runs'
    reads (the run history's ``rated`` filter, the chat's own thumbs) through
    ``apps.runs.hooks.message_ratings``."""

    name = "apps.ratings"
    label = "ratings"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from apps.runs.hooks import message_ratings

        from .models import MessageRating

        message_ratings.provide(MessageRating.objects.all)
