from django.apps import AppConfig


class RatingsConfig(AppConfig):
    """Thumbs up/down (and an optional comment) that people leave on an assistant turn:
    ``message_ratings``, the quality figures behind the dashboard, the ratings summary.

    Its own app so the runs app (conversations, messages) needs no migration for it and keeps
    importing nothing above itself: runs and spend read ratings by model name only, as the run
    history's ``rated`` filter and the usage quality block do."""

    name = "apps.ratings"
    label = "ratings"
    default_auto_field = "django.db.models.BigAutoField"
