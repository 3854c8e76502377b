import time

from agenticos.health import HEARTBEAT_KEY_PREFIX, redis_client


def test_healthz_reports_db_redis_and_a_fresh_worker_heartbeat(client, db):
    key = HEARTBEAT_KEY_PREFIX + "test-worker@healthz"
    redis_client().set(key, time.time(), ex=60)
    try:
        response = client.get("/healthz")
    finally:
        redis_client().delete(key)
    assert response.status_code == 200
    assert response.json() == {"db": "ok", "redis": "ok", "worker": "ok"}


def test_healthz_is_503_with_a_reason_when_redis_is_unreachable(client, db, settings):
    settings.REDIS_URL = "redis://127.0.0.1:1/0"
    response = client.get("/healthz")
    assert response.status_code == 503
    body = response.json()
    assert body["db"] == "ok"
    assert body["redis"].startswith("error:")
    assert body["worker"].startswith("unknown")
