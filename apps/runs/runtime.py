"""Where runs execute: many runs of a worker process on one event loop (docs/runner.md).

A run spends almost all its life waiting on its model provider, so a worker process holds many
at once: Celery's thread pool (``--pool threads --concurrency AGENTICOS_RUNS_PER_WORKER``) takes
one message per free slot, and each slot's thread hands its run to the process's one event loop
and waits for it. Celery stays the distributed engine (the queue, acks, retries, scale-out); the
loop is where the runs wait, side by side.

The database stays bounded however many runs the loop holds:

- the run's statements on the loop (the guard's reserve/settle/release, the cancel look, the
  lease) go through ``LoopPool``: at most ``AGENTICOS_RUN_DB_POOL_SIZE`` sessions, awaited on
  the loop, never blocking it;
- a run's ORM work (claim, ``prepare()``, the final booking) runs on a small thread pool of
  ``BLOCKING_THREADS`` threads, each borrowing from Django's own pool
  (``AGENTICOS_DB_POOL_SIZE``) and giving its connection back after each call. The pool has two
  lanes: a run's end (``host.ending``) goes ahead of every waiting claim and assembly, so a
  cancel or an answer is booked at once even while a burst of new runs is being assembled.

One watcher per host looks for cancel requests of every run it holds in one statement every
``CANCEL_POLL_SECONDS`` and renews their leases in one statement every ``lease_renew_seconds()``,
instead of one query per run.

``InlineHost`` is the same contract for a run executed in the calling thread (tests, a resume
inside a request, the benchmark): the caller's own session and transaction.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import itertools
import logging
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from typing import Any, TypeVar

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import close_old_connections

from agenticos.loopdb import LoopConnection, LoopPool

from . import services

logger = logging.getLogger(__name__)

T = TypeVar("T")

# How often a running run looks for a cancel request (one statement for all the host's runs).
CANCEL_POLL_SECONDS = 0.25
# How often the worker renews the leases of the runs it holds (RUN_LEASE_SECONDS long) at most.
LEASE_RENEW_SECONDS = 10.0


def lease_renew_seconds() -> float:
    return min(LEASE_RENEW_SECONDS, settings.RUN_LEASE_SECONDS / 3)


# Threads for a run's blocking ORM work in a worker: few, since each holds a connection while busy.
BLOCKING_THREADS = 4
# The loop's default executor (``asyncio.to_thread``, DNS lookups): Redis round trips, chart
# drawing, embeddings, a platform's HTTP API — work that never touches the database, so it
# neither queues behind the runs' ORM work nor holds connections of its own.
IO_THREADS = 8


# The blocking pool's lanes, lowest first out.
ENDING_LANE, WORK_LANE, STOP_LANE = 0, 1, 2


class LanedExecutor(Executor):
    """A fixed pool of threads taking work from a priority queue: what is submitted on the
    ending lane runs before any work still waiting on the ordinary lane (in order within a lane).
    The threads live as long as the process (they are daemons) unless ``shutdown`` is called."""

    def __init__(self, max_workers: int, thread_name_prefix: str) -> None:
        self._queue: queue.PriorityQueue = queue.PriorityQueue()
        self._order = itertools.count()
        self._threads = [
            threading.Thread(target=self._work, name=f"{thread_name_prefix}_{n}", daemon=True)
            for n in range(max_workers)
        ]
        for thread in self._threads:
            thread.start()

    def submit(self, fn, /, *args, **kwargs) -> Future:
        return self.submit_on(WORK_LANE, fn, *args, **kwargs)

    def submit_on(self, lane: int, fn, /, *args, **kwargs) -> Future:
        future: Future = Future()
        # The counter breaks ties, so two items never compare their futures.
        self._queue.put((lane, next(self._order), future, fn, args, kwargs))
        return future

    def _work(self) -> None:
        while True:
            _, _, future, fn, args, kwargs = self._queue.get()
            if future is None:
                return
            if not future.set_running_or_notify_cancel():
                continue
            try:
                result = fn(*args, **kwargs)
            except BaseException as exc:  # handed to whoever awaits the future
                future.set_exception(exc)
            else:
                future.set_result(result)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        for _ in self._threads:
            self._queue.put((STOP_LANE, next(self._order), None, None, (), {}))
        if wait:
            for thread in self._threads:
                thread.join()


class RunHost:
    """What a run needs from where it executes: a session its loop can send statements on
    (``db``), a way to run blocking ORM work off the loop (``blocking``), and the watcher that
    trips a run's cancellation token and renews its lease."""

    def __init__(self, db: Any = None) -> None:
        self.db = db
        self._tokens: dict[int, Any] = {}
        self._watcher: asyncio.Task | None = None
        self._since_renewal = 0.0

    async def blocking(self, fn: Callable[..., T], *args, **kwargs) -> T:
        raise NotImplementedError

    async def ending(self, fn: Callable[..., T], *args, **kwargs) -> T:
        """``blocking`` for the work that ends a run (its booking): ahead of claims and
        assemblies where the host has a queue. Inline there is none."""
        return await self.blocking(fn, *args, **kwargs)

    # -- the watcher ----------------------------------------------------------------------------

    def follow(self, run_id: int, token) -> None:
        """Watch ``run_id`` until ``forget``: trip ``token`` when someone asks to cancel it."""
        self._tokens[run_id] = token
        if self._watcher is None or self._watcher.done():
            self._watcher = asyncio.get_running_loop().create_task(self._watch())

    async def unfollow(self, run_id: int) -> None:
        """Stop watching ``run_id``; the last run out stops the watcher (a look already sent is
        read to its end first, so the session is clean when the run's final booking uses it)."""
        self._tokens.pop(run_id, None)
        if not self._tokens:
            await self.stop_watching()

    @property
    def followed(self) -> list[int]:
        return list(self._tokens)

    async def _watch(self) -> None:
        while self._tokens:
            # A cancel asked before the claim already ended the run; the first look is one poll in.
            await asyncio.sleep(CANCEL_POLL_SECONDS)
            ids = list(self._tokens)
            if not ids:
                break
            try:
                for run_id in await services.runs_cancel_requested(self.db, ids):
                    token = self._tokens.pop(run_id, None)
                    if token is not None:
                        token.cancel()
                self._since_renewal += CANCEL_POLL_SECONDS
                if self._since_renewal >= lease_renew_seconds():
                    self._since_renewal = 0.0
                    await services.runs_lease_renew(self.db, list(self._tokens))
            except asyncio.CancelledError:
                raise
            except Exception:  # the database was unreachable for a moment: look again next time
                logger.exception("run watcher: looking for cancel requests failed")
        self._watcher = None

    async def stop_watching(self) -> None:
        watcher, self._watcher = self._watcher, None
        if watcher is not None and not watcher.done():
            watcher.cancel()
            # A look already sent is read to its end (loopdb) before the session is given back.
            await asyncio.gather(watcher, return_exceptions=True)


class InlineHost(RunHost):
    """A run executed by the calling thread (``runner.execute_run``): the loop is
    ``async_to_sync``'s and its statements go on the caller's own session (agenticos/loopdb.py),
    so a test's transaction sees everything; blocking work comes back to the calling thread."""

    def __init__(self) -> None:
        super().__init__(LoopConnection())

    async def blocking(self, fn: Callable[..., T], *args, **kwargs) -> T:
        return await sync_to_async(functools.partial(fn, *args, **kwargs), thread_sensitive=True)()


class WorkerHost(RunHost):
    """The worker process's host: one event loop in a thread of its own, a ``LoopPool`` and a
    small thread pool for blocking work. Built once per process (``worker_host()``)."""

    def __init__(self, *, db_pool_size: int, blocking_threads: int = BLOCKING_THREADS) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self._executor = LanedExecutor(max_workers=blocking_threads, thread_name_prefix="run-orm")
        self.loop.set_default_executor(
            ThreadPoolExecutor(max_workers=IO_THREADS, thread_name_prefix="run-io")
        )
        self._thread = threading.Thread(target=self.loop.run_forever, name="run-loop", daemon=True)
        self._thread.start()
        self.db = asyncio.run_coroutine_threadsafe(
            self._open_pool(db_pool_size), self.loop
        ).result()
        self.in_flight = 0

    async def _open_pool(self, size: int) -> LoopPool:
        pool = LoopPool(size=size)
        await pool.open()
        return pool

    async def blocking(self, fn: Callable[..., T], *args, **kwargs) -> T:
        return await self._on_lane(WORK_LANE, fn, *args, **kwargs)

    async def ending(self, fn: Callable[..., T], *args, **kwargs) -> T:
        return await self._on_lane(ENDING_LANE, fn, *args, **kwargs)

    async def _on_lane(self, lane: int, fn: Callable[..., T], *args, **kwargs) -> T:
        context = contextvars.copy_context()

        def call() -> T:
            try:
                return fn(*args, **kwargs)
            finally:
                # Back to Django's pool after each call: these threads serve every run of the loop.
                close_old_connections()

        return await asyncio.wrap_future(self._executor.submit_on(lane, context.run, call))

    def run(self, coroutine) -> Any:
        """Run ``coroutine`` on the loop and wait for it (from a Celery pool thread)."""
        future = asyncio.run_coroutine_threadsafe(self._counted(coroutine), self.loop)
        try:
            return future.result()
        except BaseException:
            future.cancel()
            raise

    async def _counted(self, coroutine) -> Any:
        self.in_flight += 1
        try:
            return await coroutine
        finally:
            self.in_flight -= 1


_host: WorkerHost | None = None
_host_lock = threading.Lock()


def worker_host() -> WorkerHost:
    """This process's worker host, started on first use."""
    global _host
    with _host_lock:
        if _host is None:
            _host = WorkerHost(db_pool_size=settings.AGENTICOS_RUN_DB_POOL_SIZE)
        return _host
