"""agenticos/loopdb.py: statements sent from an event loop on the session of the thread that owns
it — the run's own transaction, one statement at a time, never interleaved with the owning
thread's queries, always read to its end."""

import asyncio
import contextlib
import threading
import time

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from django.db import DataError, connection, transaction
from psycopg.types.numeric import Int8

from agenticos.loopdb import LoopConnection, Statement
from apps.orgs.models import Organization

NAME_OF = Statement("test_name_of", 'SELECT name FROM "orgs_organization" WHERE id = %(id)s')
SLOW_ONE = Statement("test_slow_one", "SELECT 1 FROM pg_sleep(%(seconds)s)")
RENAME = Statement(
    "test_rename", 'UPDATE "orgs_organization" SET name = %(name)s WHERE id = %(id)s'
)
DIVIDE = Statement("test_divide", "SELECT 1 / %(by)s")


def owner_query(sql: str, params=()):
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall() if cursor.description is not None else None


@pytest.mark.django_db
def test_a_statement_from_the_loop_runs_in_the_owning_threads_transaction(org):
    org.name = "Renamed, not committed"
    org.save(update_fields=["name"])  # inside the test's transaction
    db = LoopConnection()

    rows = async_to_sync(db.fetch)(NAME_OF, {"id": Int8(org.pk)})

    assert rows == [("Renamed, not committed",)]


@pytest.mark.django_db
def test_named_placeholders_become_positional_and_repeat():
    statement = Statement("test_repeat", "SELECT %(a)s::int + %(b)s::int + %(a)s::int")

    assert statement.params == ("a", "b")
    assert statement.positional_sql == b"SELECT $1::int + $2::int + $1::int"
    assert async_to_sync(LoopConnection().fetch)(statement, {"a": 1, "b": 10}) == [(12,)]


@pytest.mark.django_db
def test_the_owning_threads_query_waits_for_a_statement_in_flight(org):
    db = LoopConnection()

    async def both():
        in_flight = asyncio.ensure_future(db.fetch(SLOW_ONE, {"seconds": 0.3}))
        await asyncio.sleep(0.05)
        started = time.monotonic()
        owner_rows = await sync_to_async(owner_query)(
            'SELECT name FROM "orgs_organization" WHERE id = %s', [org.pk]
        )
        return await in_flight, owner_rows, time.monotonic() - started

    loop_rows, owner_rows, waited = async_to_sync(both)()

    assert loop_rows == [(1,)] and owner_rows == [(org.name,)]
    assert waited >= 0.2  # it queued behind the statement instead of interleaving with it


@pytest.mark.django_db
def test_the_loop_waits_while_the_owning_thread_is_running_a_query(org):
    db = LoopConnection()

    async def both():
        owner = asyncio.ensure_future(sync_to_async(owner_query)("SELECT 1 FROM pg_sleep(0.3)"))
        await asyncio.sleep(0.05)
        return await db.fetch(NAME_OF, {"id": Int8(org.pk)}), await owner

    assert async_to_sync(both)() == ([(org.name,)], [(1,)])


@pytest.mark.django_db
def test_a_cancelled_caller_waits_for_its_statement_and_the_session_stays_usable(org):
    db = LoopConnection()

    async def cancel_mid_statement():
        started = time.monotonic()
        task = asyncio.ensure_future(db.fetch(SLOW_ONE, {"seconds": 0.3}))
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        elapsed = time.monotonic() - started
        return elapsed, await db.fetch(NAME_OF, {"id": Int8(org.pk)})

    elapsed, rows = async_to_sync(cancel_mid_statement)()

    assert elapsed >= 0.25  # the statement was read to its end before the cancellation went on
    assert rows == [(org.name,)]
    assert owner_query("SELECT 2") == [(2,)]


@pytest.mark.django_db(transaction=True)
def test_a_database_error_is_djangos_and_the_next_statement_works(org):
    db = LoopConnection()

    with pytest.raises(DataError):
        async_to_sync(db.fetch)(DIVIDE, {"by": 0})

    assert async_to_sync(db.fetch)(DIVIDE, {"by": 1}) == [(1,)]


@pytest.mark.django_db(transaction=True)
def test_statements_are_prepared_again_after_the_session_dropped_them(org):
    db = LoopConnection()
    async_to_sync(db.fetch)(NAME_OF, {"id": Int8(org.pk)})
    owner_query("DEALLOCATE ALL")

    assert async_to_sync(db.fetch)(NAME_OF, {"id": Int8(org.pk)}) == [(org.name,)]


@pytest.mark.django_db(transaction=True)
def test_a_statement_opening_an_atomic_block_belongs_to_it_and_rolls_back_with_it(org):
    original = org.name

    class Undo(Exception):
        pass

    with pytest.raises(Undo), transaction.atomic():
        # Nothing has run in the block yet: the statement itself opens the transaction.
        db = LoopConnection()
        async_to_sync(db.fetch)(RENAME, {"name": "Inside the block", "id": Int8(org.pk)})
        assert Organization.objects.get(pk=org.pk).name == "Inside the block"
        raise Undo

    assert Organization.objects.get(pk=org.pk).name == original


@pytest.mark.django_db(transaction=True)
def test_a_statement_never_joins_a_transaction_the_owning_thread_opened_since(org):
    original = org.name
    db = LoopConnection()  # outside any transaction, as in a worker
    inside = threading.Event()

    def owner_renames_then_rolls_back():
        with contextlib.suppress(RuntimeError), transaction.atomic():
            Organization.objects.filter(pk=org.pk).update(name="Never committed")
            inside.set()
            time.sleep(0.3)
            raise RuntimeError("roll back")

    async def both():
        owner = asyncio.ensure_future(sync_to_async(owner_renames_then_rolls_back)())
        while not inside.is_set():
            await asyncio.sleep(0.005)
        started = time.monotonic()
        rows = await db.fetch(NAME_OF, {"id": Int8(org.pk)})
        waited = time.monotonic() - started
        await owner
        return rows, waited

    rows, waited = async_to_sync(both)()

    assert rows == [(original,)]  # it did not read (or write) inside the owner's transaction
    assert waited >= 0.2  # it waited for that transaction to end
