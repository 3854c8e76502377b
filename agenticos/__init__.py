"""AgenticOS: the project package (settings, urls, asgi, celery, the `agenticos` command)."""

from . import forking  # noqa: F401  (a forked child forgets its parent's pooled connections)
from .celery import app as celery_app

__all__ = ["celery_app"]
