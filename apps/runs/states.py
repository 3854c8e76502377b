"""The one way a Run's status moves: a conditional UPDATE claimed against the status it was read
with, the row count checked, and the pair checked against ``RUN_TRANSITIONS`` (apps/runs/choices.py).

Two writers racing for one run (a worker's end and a sweep, a decision's resume and a cancel) both
claim from the status they saw; the database lets one of them win and the other finds nothing to
move. A pair the table does not hold is a programming error, refused before any SQL is sent.
"""

from __future__ import annotations

from collections.abc import Iterable

from .choices import RUN_TRANSITIONS
from .models import Run


class IllegalTransition(ValueError):
    """A claim asked for a move the run state machine does not have."""

    def __init__(self, from_status: str, to_status: str) -> None:
        self.from_status = from_status
        self.to_status = to_status
        super().__init__(f"a run cannot move from {from_status} to {to_status}")


def check_transition(from_status: str, to_status: str) -> None:
    if to_status not in RUN_TRANSITIONS.get(from_status, frozenset()):
        raise IllegalTransition(from_status, to_status)


def claim(
    run_id: int,
    *,
    from_statuses: Iterable[str],
    to_status: str,
    where: dict | None = None,
    **fields,
) -> bool:
    """Move run ``run_id`` from one of ``from_statuses`` to ``to_status``, writing ``fields`` with
    it, when it still is in one of them (and matches ``where``). True when this call moved it."""
    sources = list(from_statuses)
    for source in sources:
        check_transition(source, to_status)
    rows = Run.objects.filter(pk=run_id, status__in=sources, **(where or {}))
    return rows.update(status=to_status, **fields) == 1
