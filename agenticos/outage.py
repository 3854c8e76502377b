"""What a request answers while PostgreSQL or Redis is away: 503 with Retry-After, not 500.

A database or broker that is restarting is not a bug in the request: the same request succeeds
in a few seconds, and a client (or a load balancer) should be told so in the words HTTP has for
it. The one place this is decided is Django's 500 handler (agenticos/errors.py): every exception
nothing else handled reaches it — from a view, from DRF (whose handler leaves these alone), or
from a middleware that touched the session or the cache first — so the mapping lives here once.
"""

from __future__ import annotations

import select

import psycopg
import redis
from django.db import utils as db_utils
from kombu.exceptions import OperationalError as BrokerOperationalError
from redis.backoff import ExponentialBackoff
from redis.retry import Retry

# The embedded Redis restarts in about a second and PostgreSQL in a few; a client retrying after
# this long usually finds them back (the launcher supervises both, docs/deployment.md).
RETRY_AFTER_SECONDS = 5

OUTAGE_ERRORS: tuple[type[BaseException], ...] = (
    # The database refused or dropped the connection (psycopg_pool's PoolTimeout is one).
    db_utils.OperationalError,
    db_utils.InterfaceError,
    psycopg.OperationalError,
    psycopg.InterfaceError,
    # Redis (cache, throttles, frames) unreachable, stalled, or still loading its data.
    redis.ConnectionError,
    redis.TimeoutError,
    # Celery could not hand a task to the broker after its publish retries.
    BrokerOperationalError,
)

# How far down a chain of "raised while handling" to look: a wrapper around a dropped connection
# is still a dropped connection.
_CHAIN_DEPTH = 5


def outage_cause(exc: BaseException | None) -> BaseException | None:
    """The database or broker failure behind ``exc``, or None when it is not one."""
    seen = 0
    while exc is not None and seen < _CHAIN_DEPTH:
        if isinstance(exc, OUTAGE_ERRORS):
            return exc
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return None


def service_named(exc: BaseException) -> str:
    if isinstance(exc, (redis.RedisError, BrokerOperationalError)):
        return "redis"
    return "database"


# A run's own writes to Redis (its frames, apps/runs/events.py) ride over a Redis restart instead
# of failing the run: each command is retried with backoff (0.2 s doubling to 2 s) about 25 s in
# all, longer than the launcher takes to restart the embedded Redis or a container orchestrator a
# Redis container. Past that the outage is real and the run fails as before. Requests do not use
# this: they answer 503 at once and the client retries (docs/deployment.md).
RUN_REDIS_RETRIES = 16
RUN_REDIS_BACKOFF_BASE_SECONDS = 0.1
RUN_REDIS_BACKOFF_CAP_SECONDS = 2.0


def run_redis_options() -> dict:
    """Keyword arguments for the Redis client a worker's runs write through."""
    return {
        "retry": Retry(
            ExponentialBackoff(
                cap=RUN_REDIS_BACKOFF_CAP_SECONDS, base=RUN_REDIS_BACKOFF_BASE_SECONDS
            ),
            retries=RUN_REDIS_RETRIES,
        ),
        # A stalled Redis (not a dead one) is a failed attempt after this long, then retried.
        "socket_connect_timeout": 3,
        "socket_timeout": 10,
    }


def drop_if_server_went_away_sync(connection) -> None:
    """A pooled session's check before it is handed out: raise when its server is gone, so the
    pool opens a fresh session instead of failing the statement about to be sent on it.

    After a PostgreSQL restart every idle session in a pool is dead, and the first statement on
    each fails ("server closed the connection unexpectedly") though the server is back. An idle,
    healthy session has nothing to read; a readable one holds the server's goodbye (a restart, a
    terminated backend) or end-of-file. Reading it costs a system call, not a round trip, so this
    check is cheap enough for every checkout, and it is exact: a session refused here never
    carried the statement, so nothing is sent twice. Used by Django's pool (agenticos/pgbackend).
    """
    pgconn = connection.pgconn
    # poll(), not select(): a worker holding hundreds of runs has descriptors past select's 1024.
    readable = select.poll()
    readable.register(pgconn.socket, select.POLLIN)
    while readable.poll(0):
        pgconn.consume_input()  # raises OperationalError at end-of-file
        if pgconn.status != psycopg.pq.ConnStatus.OK:
            raise psycopg.OperationalError("the server closed this pooled session")
