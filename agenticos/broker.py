"""The Celery broker transport: kombu's Redis transport, able to acknowledge a message after the
connection it arrived on was replaced.

Why this exists. Runs are tasks with late acknowledgement (a worker that dies before finishing
leaves the message to be delivered again). When Redis restarts, the worker's consumer closes its
broken connection and opens a new one, but the runs it was executing keep going — their leases and
bookings are in PostgreSQL. When such a run ends, Celery acknowledges its message on the channel
it came from; with kombu 5.7 that channel's transport has lost its connection (``client`` is
None), and building a Redis client for it raises ``AttributeError: 'NoneType' object has no
attribute 'hostname'``. That error is not one of the transport's connection errors, so it escapes
the event loop and the worker stops with "Unrecoverable error" — one Redis restart ended every
run on the worker.

The same happens when the consumer closes that connection's channels: putting their unacknowledged
messages back needs a Redis client, built from the same missing connection.

The fix: a channel remembers where its server is. It reads its connection parameters while its
connection is alive, and builds a client from that copy once the connection is gone, so the
acknowledgement (only the removal of the delivery tag from Redis's ``unacked`` hash: any connection
to the same server can do it) and the restore go through. If Redis is still unreachable, they
raise Redis's ConnectionError, one of the transport's connection errors, which Celery logs and
survives; the message then stays in ``unacked`` and is delivered again after the visibility
timeout, where the run's claim (in PostgreSQL) makes the second delivery a no-op.
"""

from __future__ import annotations

import logging

from kombu.transport import redis as kombu_redis

logger = logging.getLogger(__name__)


class Channel(kombu_redis.Channel):
    # Set before the parent's __init__, which may already build a client.
    _remembered_params: dict | None = None

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._remembered_params = self._connparams()

    def _connparams(self, asynchronous=False):
        gone = self.connection is None or self.connection.client is None
        if gone and not asynchronous and self._remembered_params is not None:
            logger.info("broker channel %s: connecting with its remembered parameters", id(self))
            return dict(self._remembered_params)
        return super()._connparams(asynchronous=asynchronous)


class Transport(kombu_redis.Transport):
    Channel = Channel
