"""What higher apps hear of a run's life through hooks they register (runs never imports them).

- :func:`on_run_cancelled`: ``hook(run_id=...)``, after the transaction that cancelled a run
  committed, for a run **the cancel itself ended** — a queued run, a parked one (waiting for an
  approval or an answer), or a running one whose worker had gone. No segment of such a run is
  executing, so nothing else tells the people following it: the channels app posts "cancelled"
  in the run's thread. A running run is not announced here: its worker ends it, and whoever
  follows its segment sees the end (``exposures.segment_observed``).

A hook runs after the commit, so it never sees (or announces) a cancel that rolled back; a hook
that raises is logged and skips nothing else (``transaction.on_commit(..., robust=True)``).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from django.db import transaction

_RUN_CANCELLED_HOOKS: list[Callable[..., None]] = []


def on_run_cancelled(hook: Callable[..., None]) -> None:
    if hook not in _RUN_CANCELLED_HOOKS:
        _RUN_CANCELLED_HOOKS.append(hook)


def run_cancelled(run_id: int) -> None:
    """Tell every hook, once the current transaction commits, that the cancel ended ``run_id``."""
    for hook in _RUN_CANCELLED_HOOKS:
        transaction.on_commit(partial(hook, run_id=run_id), robust=True)
