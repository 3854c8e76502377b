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

An acknowledgement on Redis is only the removal of the delivery tag from the ``unacked`` hash and
its index; any connection to the same server can do it. So a channel whose connection is gone
acknowledges (or rejects) on a short-lived client of its own, built from the parameters it was
created with. If Redis is still unreachable, that raises Redis's ConnectionError, which Celery
logs as "Couldn't ack" and survives; the message then stays in ``unacked`` and is delivered
again after the visibility timeout, where the run's claim (PostgreSQL) makes it a no-op.
"""

from __future__ import annotations

import logging

import redis
from kombu.transport import redis as kombu_redis
from kombu.transport import virtual

logger = logging.getLogger(__name__)


class Channel(kombu_redis.Channel):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        # Read while the connection is alive: afterwards it cannot be read any more.
        self._reconnect_params = self._connparams()

    def _connection_gone(self) -> bool:
        return self.connection is None or self.connection.client is None

    def _fresh_client(self) -> redis.Redis:
        return redis.Redis(connection_pool=redis.ConnectionPool(**self._reconnect_params))

    def basic_ack(self, delivery_tag, multiple=False):
        if not self._connection_gone():
            return super().basic_ack(delivery_tag, multiple=multiple)
        client = self._fresh_client()
        try:
            self.qos._remove_from_indices(delivery_tag, client.pipeline()).execute()
        finally:
            client.close()
        virtual.QoS.ack(self.qos, delivery_tag)
        logger.info("acknowledged message %s of a replaced broker connection", delivery_tag)
        return None

    def basic_reject(self, delivery_tag, requeue=False):
        if not self._connection_gone():
            return super().basic_reject(delivery_tag, requeue=requeue)
        client = self._fresh_client()
        try:
            if requeue:
                self.qos.restore_by_tag(delivery_tag, client=client, leftmost=True)
            else:
                self.qos._remove_from_indices(delivery_tag, client.pipeline()).execute()
        finally:
            client.close()
        virtual.QoS.ack(self.qos, delivery_tag)
        return None


class Transport(kombu_redis.Transport):
    Channel = Channel
