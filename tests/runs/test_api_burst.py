"""A burst of concurrent API requests is answered, not refused for want of a database connection.

Under ASGI every concurrent request runs its view on a thread of its own; without a pool each
opened a PostgreSQL connection, and 200 at once met the embedded server's 100-connection limit
("too many clients": a 500, and runs that were never claimed). Every thread now borrows from
Django's pool (AGENTICOS_DB_POOL_SIZE, docs/runner.md "Many runs per worker").
"""

from __future__ import annotations

import asyncio
import threading
import time
import uuid

import httpx
import psycopg
import pytest
from django.conf import settings
from django.db import connection

from agenticos.celery import app as celery_app
from agenticos.settings.env import database_url_of
from apps.orgs.services import api_key_create
from apps.runs.models import Run

from .factories import published_agent
from .live import asgi_server  # noqa: F401  (fixture)

BURST = 200


class ConnectionPeak:
    """Samples the test database's connections (all this process's) on a session of its own,
    outside the pool it measures."""

    def __init__(self) -> None:
        self.peak = 0
        self._stop = threading.Event()
        self._session = psycopg.connect(database_url_of(connection.settings_dict), autocommit=True)
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.is_set():
            (count,) = self._session.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
            ).fetchone()
            self.peak = max(self.peak, count)
            time.sleep(0.05)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(5)
        self._session.close()


@pytest.fixture
def throwaway_queue():
    """The runs are only queued here: their messages go to a queue nobody consumes, then away."""
    queue = f"agenticos-test-burst-{uuid.uuid4().hex[:8]}"
    previous = celery_app.conf.task_default_queue
    celery_app.conf.task_default_queue = queue
    yield queue
    celery_app.conf.task_default_queue = previous
    with celery_app.connection_for_write() as conn:
        conn.default_channel.client.delete(queue)


@pytest.mark.django_db(transaction=True)
def test_two_hundred_concurrent_run_requests_are_all_answered(
    asgi_server,  # noqa: F811  (fixture)
    throwaway_queue,
    org,
    member,
):
    agent = published_agent(org)
    _, key = api_key_create(actor=None, organization=org, user=member, name="burst")

    async def burst() -> list[httpx.Response]:
        limits = httpx.Limits(max_connections=BURST, max_keepalive_connections=BURST)
        async with httpx.AsyncClient(
            base_url=f"http://{asgi_server}", limits=limits, timeout=120
        ) as client:
            requests = [
                client.post(
                    "/api/v1/runs/",
                    json={"agent_id": agent.pk, "input": f"question {n}"},
                    headers={"Authorization": f"Bearer {key}"},
                )
                for n in range(BURST)
            ]
            return await asyncio.gather(*requests)

    with ConnectionPeak() as connections:
        responses = asyncio.run(burst())

    statuses = [response.status_code for response in responses]
    assert statuses.count(201) == BURST, sorted(set(statuses))
    assert Run.objects.filter(organization=org, status="queued").count() == BURST
    # This process's connections: Django's pool (the server's threads and the test's own), and
    # the worker runtime's loop pool if an earlier test in this process started it.
    assert (
        connections.peak <= settings.AGENTICOS_DB_POOL_SIZE + settings.AGENTICOS_RUN_DB_POOL_SIZE
    ), connections.peak
