"""Background delegations after the run stops: cancelled when it stops without answering,
outliving it when it answered, the last of them making its row final."""

from __future__ import annotations

import asyncio
import logging

from ..modelbuilder import ModelHandle
from .booking import book_late
from .types import DelegationRuntime, DelegationScope, DelegationScopeAt

logger = logging.getLogger(__name__)


async def stop_background(runtime: DelegationRuntime) -> None:
    """Cancel what still runs in the background when the run stops without answering (cancelled,
    failed, parked); each cancelled delegation is booked by its handle's finish, with its own
    spend. A run that answered leaves them running: ``outlive``."""
    for library in runtime.background:
        try:
            await library.task_manager.cancel_all(None)
        except Exception:  # a teardown that fails must not hide the run's own outcome
            logger.exception("run %s: stopping background delegations failed", runtime.run_id)


class _Stop:
    """What the host's watcher trips for a background delegation that outlived its run's answer:
    a cancel asked of the run (or of the delegation's own row) cancels it."""

    def __init__(self, runtime: DelegationRuntime, task_id: str | None = None) -> None:
        self.runtime = runtime
        self.task_id = task_id

    def cancel(self) -> None:
        for task_id, live in list(self.runtime.live.items()):
            if self.task_id is None or task_id == self.task_id:
                live.task.cancel()


async def outlive(runtime: DelegationRuntime, *, host, run_id: int, send) -> None:
    """The run answered after starting background delegations: they go on, on the same event
    loop, booking into the run's one ledger against the run's caps. The answer's own booking
    already marked the run ``accruing`` and gave each published one still running its row
    (``booking.open_accruing``, in the answer's transaction, with leases the host renews here, so
    a worker that dies leaves rows the lease sweep settles); each is booked as it settles — its
    row's end, the run's totals brought up to its whole ledger again, a notice on the run's
    conversation carrying the late spend — and the frames go out on the run's stream. The last
    booking is final: the run stops accruing with its totals the whole ledger, even when every
    delegation settled while the answer was being booked (the race issue 31 found: a run whose
    delegates finished then kept a short total and a delegate without a row). A cancel asked of
    the run, or of a delegated row, cancels them (the host's watcher)."""
    if not (runtime.outliving and runtime.background_started):
        return
    rows = dict(runtime.accruing_rows)
    host.follow(run_id, _Stop(runtime))
    for row_id, task_id in rows.items():
        host.follow(row_id, _Stop(runtime, task_id))
    try:
        while live := runtime.live_tasks():
            await asyncio.wait(live, return_when=asyncio.FIRST_COMPLETED)
            await _callbacks_ran(runtime)
            if runtime.records or runtime.late:
                send(*await host.ending(book_late, run_id, runtime))
        await _callbacks_ran(runtime)
    finally:
        for followed in [run_id, *rows]:
            await host.unfollow(followed)
    send(*await host.ending(book_late, run_id, runtime, final=True))


async def _callbacks_ran(runtime: DelegationRuntime) -> None:
    """A finished task books its record from its done callback, which the loop runs after the
    task itself: wait for those of every task that is done (a few loop turns at most)."""
    for _ in range(100):
        if not any(live.task.done() for live in runtime.live.values()):
            return
        await asyncio.sleep(0)


async def aclose_models(at: DelegationScopeAt | None, *, keep: ModelHandle) -> None:
    """Close the provider clients the run's delegates were built with (each resolved handle has its
    own connection pool, like the run's), once nothing of the run can still use them — after the
    background delegations settled. ``keep`` is the run's own handle, closed by the runner."""
    if at is None:
        return
    handles: dict[int, ModelHandle] = {}

    def collect(scope: DelegationScope) -> None:
        for delegate in scope.delegates.values():
            handles[id(delegate.handle)] = delegate.handle
            if delegate.scope is not None:
                collect(delegate.scope)
        for handle in scope.dynamic_models.values():
            handles[id(handle)] = handle

    collect(at.scope)
    handles.pop(id(keep), None)
    for handle in handles.values():
        try:
            await handle.aclose()
        except Exception:  # a client that fails to close must not hide the run's own outcome
            logger.warning("closing a delegate's model client failed", exc_info=True)
