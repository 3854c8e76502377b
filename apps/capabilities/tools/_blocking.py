"""How a tool's blocking store call (an ORM read or write of the memory app, a search) leaves the
event loop a run is driven on.

The run host knows: a worker's host runs blocking work on its small thread pool and hands the
connection back after each call; an inline host (tests, a resume inside a request) runs it on the
calling thread, inside that thread's transaction (apps/runs/runtime.py). The runner sets
:data:`tool_blocking` to its host's ``blocking`` for the length of the run, and tools call
:func:`run_blocking`; outside a run (a unit test driving a toolset) it falls back to asgiref's
thread-sensitive ``sync_to_async``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import Any, TypeVar

from asgiref.sync import sync_to_async

T = TypeVar("T")

tool_blocking: ContextVar[Callable[..., Awaitable[Any]] | None] = ContextVar(
    "agenticos_tool_blocking", default=None
)


async def run_blocking(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    blocking = tool_blocking.get()
    if blocking is not None:
        return await blocking(fn, *args, **kwargs)
    return await sync_to_async(fn, thread_sensitive=True)(*args, **kwargs)
