"""The worker's heartbeat: a Redis key per worker refreshed on a timer while it is up."""

from __future__ import annotations

import logging
import threading
import time

import redis
from celery.signals import worker_ready, worker_shutdown
from django.conf import settings

from .health import HEARTBEAT_KEY_PREFIX, redis_client

logger = logging.getLogger(__name__)
_stop = threading.Event()


def _beat(hostname: str) -> None:
    key = HEARTBEAT_KEY_PREFIX + hostname
    while not _stop.is_set():
        try:
            redis_client().set(key, time.time(), ex=settings.WORKER_HEARTBEAT_STALE_SECONDS * 2)
        except redis.RedisError as exc:
            logger.warning("worker heartbeat could not be written: %s", exc)
        _stop.wait(settings.WORKER_HEARTBEAT_SECONDS)
    try:
        redis_client().delete(key)
    except redis.RedisError:
        pass  # the key expires on its own


@worker_ready.connect
def start_heartbeat(sender=None, **kwargs) -> None:
    hostname = getattr(sender, "hostname", None) or "worker"
    threading.Thread(
        target=_beat, args=(hostname,), name="agenticos-heartbeat", daemon=True
    ).start()


@worker_shutdown.connect
def stop_heartbeat(**kwargs) -> None:
    _stop.set()
