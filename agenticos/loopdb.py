"""Prepared statements sent from an event loop on a database session another thread owns.

A run is driven by pydantic-ai on an event loop (``async_to_sync``'s loop thread) while its
database session belongs to the worker thread that prepared it: the thread whose transaction the
run's rows live in (a test runs inside one). Every model request books its cost on that session.
Hopping to the owning thread for each booking (``sync_to_async``) costs a thread wake-up each way
and has two threads contend for the GIL while the run streams: about a millisecond per request
on a two-core machine, more than the statement itself (docs/runner.md, "Benchmark").

So the few statements a run sends per request are sent from the loop itself, with libpq's
asynchronous calls (``psycopg.pq``) on the owning thread's connection: the same session and
transaction, no thread hop, and the loop waits for the socket like for any other I/O. While a
statement is in flight it holds psycopg's connection lock, so the owning thread's own queries wait
for it instead of interleaving; statements sent from the loop go one at a time, and never into a
transaction the owning thread opened after them. A statement is always read to its end — a
cancelled caller waits for it — so the session stays usable.

Statements are written with named placeholders (``%(name)s``, every value a bound parameter),
prepared once per connection, and their values adapted by psycopg's own ``Transformer``.
"""

from __future__ import annotations

import asyncio
import itertools
import re
import weakref
from dataclasses import dataclass, field
from typing import Any, Protocol

from django.db import DEFAULT_DB_ALIAS, connections
from psycopg import errors, pq
from psycopg.adapt import PyFormat, Transformer

_PLACEHOLDER = re.compile(r"%\((\w+)\)s")
# How long the loop waits before trying again for the connection while its owning thread is using it.
_LOCK_RETRY_SECONDS = 0.0005


@dataclass(frozen=True)
class Statement:
    """One SQL statement with named placeholders, sent prepared."""

    name: str
    sql: str
    # The placeholders in order of first appearance: the statement's $1, $2, ...
    params: tuple[str, ...] = field(init=False)
    positional_sql: bytes = field(init=False)

    def __post_init__(self) -> None:
        order: list[str] = []

        def positional(match: re.Match) -> str:
            if match.group(1) not in order:
                order.append(match.group(1))
            return f"${order.index(match.group(1)) + 1}"

        object.__setattr__(self, "positional_sql", _PLACEHOLDER.sub(positional, self.sql).encode())
        object.__setattr__(self, "params", tuple(order))


# What each connection has prepared: {(statement name, parameter types): prepared name}.
_prepared: weakref.WeakKeyDictionary[Any, dict[tuple, bytes]] = weakref.WeakKeyDictionary()
# Prepared names are never reused in a process: a pooled session outlives the Python view of
# what it prepared (a cache dropped after DEALLOCATE, a session handed back and borrowed again),
# and preparing a name it still holds fails with "already exists".
_names = itertools.count()


class LoopSession(Protocol):
    """What a statement is sent on from an event loop: a ``LoopConnection`` or a ``LoopPool``."""

    async def fetch(self, statement: Statement, params: dict[str, Any]) -> list[tuple]: ...


class LoopConnection:
    """The owning thread's database session, used from an event loop. Build it on the owning
    thread (it opens the connection if needed); use it from one event loop at a time, while the
    owning thread waits for that loop (``async_to_sync``) or runs its own queries in between."""

    def __init__(self, alias: str = DEFAULT_DB_ALIAS) -> None:
        self._wrapper = connections[alias]
        self._wrapper.ensure_connection()
        self._connection = self._wrapper.connection
        # Built inside a transaction (a test), statements belong to it; otherwise to none.
        self._joins_transaction = not self._connection.autocommit
        self._turn: asyncio.Lock | None = None
        self._turn_loop: asyncio.AbstractEventLoop | None = None

    async def fetch(self, statement: Statement, params: dict[str, Any]) -> list[tuple]:
        """Execute ``statement`` with ``params`` and return its rows (none for a statement that
        returns none). Database errors are raised as Django's, as the ORM raises them. Cancelled
        once sent, it is read to its end first (see ``_results``)."""
        loop = asyncio.get_running_loop()
        if self._turn is None or self._turn_loop is not loop:  # an asyncio lock serves one loop
            self._turn, self._turn_loop = asyncio.Lock(), loop
        async with self._turn:
            await self._take_session()
            try:
                with self._wrapper.wrap_database_errors:
                    return await self._exchange(
                        statement, [params[name] for name in statement.params]
                    )
            finally:
                self._connection.lock.release()

    async def _take_session(self) -> None:
        """Take psycopg's lock on the session: wait while the owning thread runs a query, and —
        when this was built outside a transaction, as in a worker — while the owning thread is
        inside a transaction of its own: a statement sent then would join it, and its rollback
        would take the statement with it."""
        lock = self._connection.lock
        while True:
            if lock.acquire(blocking=False):
                if self._joins_transaction or self._connection.autocommit:
                    return
                lock.release()
            await asyncio.sleep(_LOCK_RETRY_SECONDS)

    async def _exchange(self, statement: Statement, values: list[Any]) -> list[tuple]:
        connection = self._connection
        if connection.closed:
            raise errors.OperationalError("the connection is closed")
        pgconn = connection.pgconn
        if not connection.autocommit and pgconn.transaction_status == pq.TransactionStatus.IDLE:
            # psycopg opens the transaction lazily, before its next query: this is that query.
            pgconn.send_query(b"BEGIN")
            self._check(await self._results(pgconn))
        transformer = Transformer(connection)
        dumped = transformer.dump_sequence(values, [PyFormat.AUTO] * len(values))
        try:
            result = await self._execute_prepared(statement, transformer, dumped)
        except errors.InvalidSqlStatementName:
            # Something deallocated every prepared statement of the session (DISCARD ALL,
            # DEALLOCATE ALL). Outside a transaction nothing was lost: prepare it again.
            _prepared.pop(connection, None)
            if pgconn.transaction_status != pq.TransactionStatus.IDLE:
                raise
            result = await self._execute_prepared(statement, transformer, dumped)
        if result is None or result.status != pq.ExecStatus.TUPLES_OK:
            return []
        transformer.set_pgresult(result)
        return transformer.load_rows(0, result.ntuples, tuple)

    async def _execute_prepared(
        self, statement: Statement, transformer: Transformer, dumped
    ) -> Any:
        pgconn = self._connection.pgconn
        prepared = _prepared.setdefault(self._connection, {})
        key = (statement.name, tuple(transformer.types))
        name = prepared.get(key)
        if name is None:
            name = f"agenticos_{statement.name}_{next(_names)}".encode()
            pgconn.send_prepare(name, statement.positional_sql, param_types=transformer.types)
            self._check(await self._results(pgconn))
            prepared[key] = name
        pgconn.send_query_prepared(name, dumped, param_formats=transformer.formats)
        return self._check(await self._results(pgconn))

    def _check(self, results: list) -> Any:
        for result in results:
            if result.status not in (pq.ExecStatus.TUPLES_OK, pq.ExecStatus.COMMAND_OK):
                raise errors.error_from_result(result, encoding=self._connection.info.encoding)
        return results[-1] if results else None

    async def _results(self, pgconn) -> list:
        """Flush what was sent and read every result of it, waiting on the socket, never blocking.

        A cancellation arriving meanwhile is held back until everything is read — a statement on
        the wire cannot be taken back, and the session must stay usable — then raised."""
        loop = asyncio.get_running_loop()
        cancelled = False
        while pgconn.flush() != 0:
            cancelled |= await _wait(loop, pgconn.socket, writable=True)
        results = []
        while True:
            while pgconn.is_busy():
                cancelled |= await _wait(loop, pgconn.socket)
                pgconn.consume_input()
            result = pgconn.get_result()
            if result is None:
                break
            results.append(result)
        if cancelled:
            raise asyncio.CancelledError
        return results


async def _wait(loop: asyncio.AbstractEventLoop, fd: int, *, writable: bool = False) -> bool:
    """Wait until ``fd`` is ready; True when a cancellation arrived meanwhile (held back)."""
    try:
        await _ready(loop, fd, writable=writable)
    except asyncio.CancelledError:
        return True
    return False


async def _ready(loop: asyncio.AbstractEventLoop, fd: int, *, writable: bool = False) -> None:
    ready = loop.create_future()

    def wake() -> None:
        if not ready.done():
            ready.set_result(None)

    add, remove = (
        (loop.add_writer, loop.remove_writer) if writable else (loop.add_reader, loop.remove_reader)
    )
    add(fd, wake)
    try:
        await ready
    finally:
        remove(fd)


class LoopPool:
    """A fixed set of database sessions shared by every run an event loop drives (a worker's loop,
    docs/runner.md "Many runs per worker"): the same ``fetch`` as ``LoopConnection``, each
    statement on whichever session is free, in autocommit, prepared once per session.

    At most ``size`` connections, however many runs share the loop: a statement waits for a free
    session on the loop (never blocking it) instead of opening another. Built from Django's own
    connection parameters (the test database under the suite), opened on the loop that uses it."""

    def __init__(
        self, *, size: int, alias: str = DEFAULT_DB_ALIAS, name: str = "agenticos-loop"
    ) -> None:
        from psycopg import AsyncConnection
        from psycopg_pool import AsyncConnectionPool

        params = connections[alias].get_connection_params()
        # Django's cursor class is synchronous; statements here are prepared on purpose.
        params.pop("cursor_factory", None)
        params.pop("prepare_threshold", None)
        self._errors = connections[alias].wrap_database_errors
        self.size = size
        self._pool = AsyncConnectionPool(
            kwargs={**params, "autocommit": True},
            connection_class=AsyncConnection,
            min_size=1,
            max_size=size,
            open=False,
            name=name,
        )

    async def open(self) -> None:
        await self._pool.open(wait=True)

    async def close(self) -> None:
        await self._pool.close()

    async def fetch(self, statement: Statement, params: dict[str, Any]) -> list[tuple]:
        with self._errors:
            async with self._pool.connection() as connection:
                cursor = await connection.execute(statement.sql, params, prepare=True)
                if cursor.description is None:
                    return []
                return await cursor.fetchall()
