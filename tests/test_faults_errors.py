"""The one place an outage becomes a 503: Django's 500 handler (agenticos/errors.py), reached
through Django's own exception path with real failures of real clients (a port nobody listens on).
The launcher tests (tests/test_faults.py) see the same answers from a live server while Redis or
PostgreSQL is down; these pin down the mapping itself, quickly."""

from __future__ import annotations

import json
import socket

import psycopg
import pytest
import redis
from django.core.handlers.exception import response_for_exception
from django.db import OperationalError as DjangoOperationalError
from kombu import Connection


@pytest.fixture
def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]  # closed when the probe is: nobody listens there


def _answer(rf, path: str, failing) -> object:
    """What Django answers for a request at ``path`` whose handling raised what ``failing`` raises."""
    request = rf.get(path)
    try:
        failing()
    except Exception as exc:  # the real exception, handled the way Django handles it
        return response_for_exception(request, exc)
    raise AssertionError("expected the call to fail")


def _database_down(port: int):
    def failing():
        psycopg.connect(host="127.0.0.1", port=port, user="nobody", connect_timeout=2)

    return failing


def _redis_down(port: int):
    def failing():
        redis.Redis(port=port, socket_connect_timeout=2, retry=None).ping()

    return failing


def test_a_database_that_refuses_is_a_503_with_retry_after_in_json(rf, closed_port):
    response = _answer(rf, "/api/v1/runs/", _database_down(closed_port))
    assert response.status_code == 503 and response["Retry-After"] == "5"
    body = json.loads(response.content)
    assert body["code"] == "service_unavailable" and body["retry_after"] == 5
    assert "database" in body["detail"]


def test_a_redis_that_refuses_is_a_503_naming_redis(rf, closed_port):
    response = _answer(rf, "/api/v1/agents/", _redis_down(closed_port))
    assert response.status_code == 503 and response["Retry-After"] == "5"
    assert "redis" in json.loads(response.content)["detail"]


def test_a_publish_the_broker_refused_is_a_503(rf, closed_port):
    def publish():
        with Connection(f"redis://127.0.0.1:{closed_port}/0", connect_timeout=1) as connection:
            connection.ensure_connection(max_retries=1)

    response = _answer(rf, "/api/v1/runs/", publish)
    assert response.status_code == 503 and "redis" in json.loads(response.content)["detail"]


def test_an_outage_behind_another_exception_is_still_a_503(rf, closed_port):
    def wrapped():
        try:
            _database_down(closed_port)()
        except psycopg.OperationalError as exc:
            raise DjangoOperationalError("wrapped") from exc

    def behind_a_value_error():
        try:
            wrapped()
        except DjangoOperationalError as exc:
            raise ValueError("while reading the run") from exc

    response = _answer(rf, "/api/v1/runs/", behind_a_value_error)
    assert response.status_code == 503


def test_the_console_gets_a_503_page_too(rf, closed_port):
    response = _answer(rf, "/runs/", _redis_down(closed_port))
    assert response.status_code == 503 and response["Retry-After"] == "5"
    assert b"Briefly unavailable" in response.content


def test_a_bug_is_still_a_500(rf):
    def bug():
        raise ValueError("a bug, not an outage")

    response = _answer(rf, "/api/v1/runs/", bug)
    assert response.status_code == 500
    assert json.loads(response.content) == {"detail": "A server error occurred."}
    assert not response.has_header("Retry-After")
