"""The Celery application: Redis broker, tasks discovered in every app's tasks.py."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agenticos.settings.base")

app = Celery("agenticos")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

# Connect the worker's heartbeat signals (read by /healthz) and the startup-heap freeze.
import agenticos.heap  # noqa: E402,F401
import agenticos.heartbeat  # noqa: E402,F401
