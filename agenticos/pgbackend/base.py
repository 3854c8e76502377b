"""Django's PostgreSQL backend, with a pool that replaces a session whose server went away.

After a PostgreSQL restart every session in Django's pool is dead, and the first query on each
fails though the server is back: a request answers 503, a run's booking fails and the run ends
``internal_error``. Django can have the pool check each session before handing it out
(``CONN_HEALTH_CHECKS``), but its check is an empty query — a round trip on every checkout, which a
worker holding hundreds of runs pays many times a second. This backend gives the same pool a check
that reads the socket instead (agenticos/outage.py): a system call, no round trip.
"""

from __future__ import annotations

from django.db.backends.postgresql import base

from agenticos.outage import drop_if_server_went_away_sync


class DatabaseWrapper(base.DatabaseWrapper):
    @property
    def pool(self):
        pool = super().pool
        # psycopg_pool takes its check at construction, which Django does (with None unless
        # CONN_HEALTH_CHECKS); it is the attribute getconn() calls.
        if pool is not None and getattr(pool, "_check", None) is None:
            pool._check = drop_if_server_went_away_sync
        return pool
