"""`GET /healthz`: the state of the database, Redis and the Celery worker, each "ok" or a reason."""

from __future__ import annotations

import time

import redis
from django.conf import settings
from django.db import connection
from django.http import JsonResponse

HEARTBEAT_KEY_PREFIX = "agenticos:worker-heartbeat:"


def redis_client() -> redis.Redis:
    return redis.Redis.from_url(settings.REDIS_URL, socket_connect_timeout=2, socket_timeout=2)


def _database() -> str:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        return "ok"
    except Exception as exc:  # the probe's whole job is to turn any failure into a reason
        return f"error: {exc.__class__.__name__}"


def _redis_and_worker() -> tuple[str, str]:
    try:
        client = redis_client()
        client.ping()
    except redis.RedisError as exc:
        return f"error: {exc.__class__.__name__}", "unknown: redis unreachable"
    # A worker writes its heartbeat every WORKER_HEARTBEAT_SECONDS (agenticos.heartbeat); the
    # worker is "ok" only when some heartbeat is fresh — a real signal, not a guess.
    newest = 0.0
    for key in client.scan_iter(match=HEARTBEAT_KEY_PREFIX + "*", count=100):
        value = client.get(key)
        if value:
            newest = max(newest, float(value))
    if not newest:
        return "ok", "down: no worker heartbeat"
    age = time.time() - newest
    if age > settings.WORKER_HEARTBEAT_STALE_SECONDS:
        return "ok", f"down: last heartbeat {int(age)}s ago"
    return "ok", "ok"


def healthz(request):
    redis_state, worker_state = _redis_and_worker()
    body = {"db": _database(), "redis": redis_state, "worker": worker_state}
    healthy = all(value == "ok" for value in body.values())
    return JsonResponse(body, status=200 if healthy else 503)
