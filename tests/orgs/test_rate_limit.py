"""The per-caller API rate limit holds under concurrency, an empty setting turns it off, and
anonymous refusals are limited per address (issue 32, item 5).

DRF's cache throttle read the history, appended and wrote it back: 16 threads made 900 of 900
requests pass a 600-a-minute limit. The counter is now one atomic Redis script; these tests run
real threads against the real Redis. The window is an hour, so no request can fall into a second
window while a loaded machine runs the test: the count is exact, with no timing in it.
"""

from __future__ import annotations

import threading
from collections import Counter

import pytest
from django.db import connection
from django.test import override_settings
from rest_framework.test import APIClient

from apps.orgs.services import api_key_create
from apps.orgs.throttling import parse_rate, window_hit

THREADS = 16
REQUESTS_PER_THREAD = 5


def _hammer(make_client, path="/api/v1/orgs/", **extra) -> Counter:
    """THREADS threads, started together, each sending REQUESTS_PER_THREAD requests."""
    statuses: Counter = Counter()
    lock = threading.Lock()
    start = threading.Barrier(THREADS)

    def worker():
        client = make_client()
        try:
            start.wait()
            for _ in range(REQUESTS_PER_THREAD):
                status = client.get(path, **extra).status_code
                with lock:
                    statuses[status] += 1
        finally:
            connection.close()

    threads = [threading.Thread(target=worker) for _ in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return statuses


@pytest.mark.django_db(transaction=True)
def test_sixteen_threads_of_one_key_get_exactly_the_limit(org, member):
    _, raw_key = api_key_create(actor=None, organization=org, user=member, name="burst")

    def keyed_client():
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw_key}")
        return client

    with override_settings(API_RATE_LIMIT="30/hour"):
        statuses = _hammer(keyed_client)
    assert statuses == Counter({200: 30, 429: THREADS * REQUESTS_PER_THREAD - 30})


@pytest.mark.django_db(transaction=True)
def test_sixteen_threads_without_credentials_get_exactly_the_anonymous_limit(org):
    with override_settings(API_ANON_RATE_LIMIT="25/hour"):
        statuses = _hammer(APIClient, REMOTE_ADDR="10.32.5.1")
    assert statuses == Counter({401: 25, 429: THREADS * REQUESTS_PER_THREAD - 25})


def test_the_counter_itself_is_exact_under_threads(settings):
    key = f"{settings.THROTTLE_KEY_PREFIX}:test:counter-under-threads"
    allowed: list[bool] = []
    lock = threading.Lock()
    start = threading.Barrier(THREADS)

    def worker():
        start.wait()
        for _ in range(REQUESTS_PER_THREAD):
            passed, wait = window_hit(key, 17, 3600)
            assert 0 < wait <= 3600
            with lock:
                allowed.append(passed)

    threads = [threading.Thread(target=worker) for _ in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert allowed.count(True) == 17
    assert len(allowed) == THREADS * REQUESTS_PER_THREAD


def test_an_empty_rate_turns_the_limit_off(org, member, client_for):
    client = client_for(member, org)
    with override_settings(API_RATE_LIMIT=""):
        assert {client.get("/api/v1/orgs/").status_code for _ in range(5)} == {200}
    assert parse_rate("") is None and parse_rate(None) is None


def test_an_empty_environment_value_turns_it_off_and_a_bad_one_fails_loudly(monkeypatch):
    from django.core.exceptions import ImproperlyConfigured

    from agenticos.settings.env import env_rate

    monkeypatch.setenv("API_RATE_LIMIT", "")
    assert env_rate("API_RATE_LIMIT", "600/minute") == ""
    monkeypatch.delenv("API_RATE_LIMIT")
    assert env_rate("API_RATE_LIMIT", "600/minute") == "600/minute"
    monkeypatch.setenv("API_RATE_LIMIT", "lots")
    with pytest.raises(ImproperlyConfigured, match="API_RATE_LIMIT"):
        env_rate("API_RATE_LIMIT", "600/minute")


def test_anonymous_401s_are_limited_per_address_and_say_when_to_retry(db, api_client):
    with override_settings(API_ANON_RATE_LIMIT="3/hour"):
        statuses = [
            api_client.get("/api/v1/agents/", REMOTE_ADDR="10.32.6.1").status_code for _ in range(4)
        ]
        refused = api_client.get("/api/v1/agents/", REMOTE_ADDR="10.32.6.1")
        # Another address has its own count.
        other = api_client.get("/api/v1/agents/", REMOTE_ADDR="10.32.6.2")
    assert statuses == [401, 401, 401, 429]
    assert refused.status_code == 429 and 0 < int(refused["Retry-After"]) <= 3600
    assert other.status_code == 401


def test_a_forwarded_header_does_not_give_an_anonymous_client_a_new_count(db, api_client):
    with override_settings(API_ANON_RATE_LIMIT="2/hour"):
        statuses = [
            api_client.get(
                "/api/v1/agents/", REMOTE_ADDR="10.32.7.1", HTTP_X_FORWARDED_FOR=f"192.0.2.{n}"
            ).status_code
            for n in range(3)
        ]
    assert statuses == [401, 401, 429]
