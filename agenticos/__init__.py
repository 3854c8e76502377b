"""AgenticOS: the project package (settings, urls, asgi, celery, the `agenticos` command)."""

from .celery import app as celery_app

__all__ = ["celery_app"]
