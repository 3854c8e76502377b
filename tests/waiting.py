"""Waiting on the event itself (docs/testing.md): a test that pauses for a fixed time either
wastes it on a quiet machine or fails on a loaded one. These poll for the thing the test needs,
with a deadline long enough for a machine shared by a whole team."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import TypeVar

from django.utils import timezone

T = TypeVar("T")

POLL_SECONDS = 0.02


def wait_until(predicate: Callable[[], T], *, timeout: float = 30.0, what: str) -> T:
    """The predicate's first truthy value; an AssertionError naming ``what`` at the deadline."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout} s")
        time.sleep(POLL_SECONDS)


def wait_until_lapsed(run_ids: Iterable[int], *, timeout: float = 30.0) -> None:
    """Until every one of these runs' leases has expired by the database's own row (no renewal
    can come: the worker holding them is dead), measured on the clock the sweep uses."""
    from apps.runs.models import Run

    ids = list(run_ids)
    leases = list(Run.objects.filter(pk__in=ids).values_list("lease_expires_at", flat=True))
    assert len(leases) == len(ids) and all(leases), f"runs {ids} hold no lease: {leases}"
    latest = max(leases)
    wait_until(
        lambda: timezone.now() > latest,
        timeout=timeout,
        what=f"the leases of runs {ids} lapsing at {latest}",
    )
