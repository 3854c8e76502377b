"""A forked child forgets the database connections it inherited.

Every process borrows its connections from Django's pool (agenticos/settings/base.py): a
connection handed back to the pool stays open. A child forked afterwards (a prefork pool's child,
a benchmark's forked worker) inherits those open sockets; borrowing one, it would share a
PostgreSQL session with its parent — each sending statements into the other's session (seen as
"prepared statement ... already exists"). So the child drops the inherited pools and the
connection it inherited, without closing them (closing would end the parent's sessions), and
opens its own.
"""

from __future__ import annotations

import os
import sys

# What the child inherited, kept referenced for its whole life: collected, a pool or a connection
# would close itself, ending the parent's session on the shared socket.
_inherited: list = []


def _forget_inherited_connections() -> None:
    base = sys.modules.get("django.db.backends.postgresql.base")
    if base is None:  # Django's PostgreSQL backend never loaded: nothing was inherited
        return
    _inherited.append(base.DatabaseWrapper._connection_pools)
    base.DatabaseWrapper._connection_pools = {}
    from django.db import connections

    for wrapper in connections.all(initialized_only=True):
        if wrapper.connection is not None:
            _inherited.append(wrapper.connection)
            wrapper.connection = None


os.register_at_fork(after_in_child=_forget_inherited_connections)
