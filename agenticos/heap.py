"""A worker's startup heap, set aside from the garbage collector.

Everything a worker imports at startup — Django, pydantic-ai, psycopg, the apps: about 175,000
objects — lives as long as the process, and CPython's full (generation 2) collection walks all
of it each time it runs: about 100 ms here, landing inside whichever run is executing at that
moment (docs/runner.md, "Benchmark"). ``gc.freeze()`` moves those objects to a permanent
generation the collector skips; everything created later is collected as before. A prefork pool's
children do it after the fork, the main process (and a solo pool) once the worker is ready.

A worker then holds hundreds of runs in flight, and their objects are the heap the collector
walks: with CPython's default thresholds (700, 10, 10) a worker collected its young generation
over a thousand times and its whole heap about ten times (200–300 ms each) during the 500-run
benchmark, a fifth of its CPU. ``WORKER_GC_THRESHOLDS`` collects the young generation every
50,000 allocations instead of 700 and the whole heap a tenth as often; a run's objects are mostly
freed by reference counting when it ends, so the peak RSS did not move (docs/runner.md).
"""

from __future__ import annotations

import gc

from celery.signals import worker_process_init, worker_ready

# (young generation, middle, old): see the module's docstring.
WORKER_GC_THRESHOLDS = (50_000, 20, 100)


def freeze_startup_heap() -> None:
    """Collect what startup left behind, then freeze the rest (the run path's modules included)."""
    # The provider clients a run builds: imported here, not by a worker's first runs.
    import openai  # noqa: F401
    import pydantic_ai.models.openai  # noqa: F401
    import pydantic_ai.providers.openai  # noqa: F401

    import apps.runs.runner  # noqa: F401  (imported before the freeze, so it is frozen too)
    from apps.capabilities.registry import all_capabilities

    all_capabilities()  # the catalog, loaded once before any run asks for it
    gc.collect()
    gc.freeze()
    gc.set_threshold(*WORKER_GC_THRESHOLDS)


@worker_process_init.connect
def _pool_child_started(**kwargs) -> None:
    freeze_startup_heap()


@worker_ready.connect
def _worker_ready(**kwargs) -> None:
    freeze_startup_heap()
