"""agenticos/heap.py: a worker sets its startup heap aside from the garbage collector."""

import gc
import time

from celery.signals import worker_process_init, worker_ready

from agenticos import heap


def test_freezing_the_startup_heap_makes_a_full_collection_cheap():
    thresholds = gc.get_threshold()
    gc.unfreeze()
    try:
        heap.freeze_startup_heap()

        assert gc.get_freeze_count() > 100_000  # Django, pydantic-ai, psycopg, the apps
        started = time.perf_counter()
        gc.collect(2)
        assert time.perf_counter() - started < 0.05  # walking the whole heap takes ~100 ms
        # A worker holding hundreds of runs collects far less often than CPython's default.
        assert gc.get_threshold() == heap.WORKER_GC_THRESHOLDS
    finally:
        gc.unfreeze()
        gc.set_threshold(*thresholds)


def test_the_worker_freezes_when_ready_and_in_every_pool_child():
    def connected(signal, receiver):
        return any(ref() is receiver for _, ref in signal.receivers)

    assert connected(worker_ready, heap._worker_ready)
    assert connected(worker_process_init, heap._pool_child_started)
