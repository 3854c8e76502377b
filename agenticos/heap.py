"""A worker's startup heap, set aside from the garbage collector.

Everything a worker imports at startup — Django, pydantic-ai, psycopg, the apps: about 175,000
objects — lives as long as the process, and CPython's full (generation 2) collection walks all
of it each time it runs: about 100 ms here, landing inside whichever run is executing at that
moment (docs/runner.md, "Benchmark"). ``gc.freeze()`` moves those objects to a permanent
generation the collector skips; everything created later is collected as before. A prefork pool's
children do it after the fork, the main process (and a solo pool) once the worker is ready.
"""

from __future__ import annotations

import gc

from celery.signals import worker_process_init, worker_ready


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


@worker_process_init.connect
def _pool_child_started(**kwargs) -> None:
    freeze_startup_heap()


@worker_ready.connect
def _worker_ready(**kwargs) -> None:
    freeze_startup_heap()
