"""The worker's ORM threads take a run's end before the claims and assemblies still waiting."""

import threading

from apps.runs.runtime import ENDING_LANE, WORK_LANE, LanedExecutor


def test_work_on_the_ending_lane_runs_before_ordinary_work_still_waiting():
    executor = LanedExecutor(max_workers=1, thread_name_prefix="test-lanes")
    started, release = threading.Event(), threading.Event()
    order: list[str] = []

    def hold() -> None:
        started.set()
        release.wait(5)

    try:
        held = executor.submit(hold)
        assert started.wait(5)  # the one thread is busy: everything below waits in the queue
        waiting = [executor.submit_on(WORK_LANE, order.append, f"assembly {n}") for n in range(3)]
        end = executor.submit_on(ENDING_LANE, order.append, "end")
        release.set()
        for future in [held, *waiting, end]:
            future.result(5)
    finally:
        executor.shutdown()

    assert order == ["end", "assembly 0", "assembly 1", "assembly 2"]


def test_a_failure_reaches_whoever_waits_and_the_thread_goes_on():
    executor = LanedExecutor(max_workers=1, thread_name_prefix="test-lanes")
    try:
        failed = executor.submit(int, "not a number")
        after = executor.submit(int, "42")
        assert isinstance(failed.exception(5), ValueError)
        assert after.result(5) == 42
    finally:
        executor.shutdown()
