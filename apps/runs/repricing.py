"""The runs half of repricing a floor (apps/spend/reprice.py): spend reprices the ledger and its
counters, computes what each run row and each delegated row of its tree gains, and hands the
deltas here, inside its own transaction, through the hook this app registers
(``apps.spend.reprice.on_runs_repriced``). Only the runs app writes a Run or a Message."""

from __future__ import annotations

from collections import defaultdict
from decimal import Decimal

from django.db.models import F, Q

from apps.spend.models import LedgerEntry

from .choices import MessageRole, StopReason
from .models import Message, Run

ZERO = Decimal("0")
# A row ended by the stale-run reaper or the lease sweep is a floor for another reason (a request
# in flight when its worker died may have been billed and never booked): pricing its entries does
# not make it exact.
FLOOR_FOR_ANOTHER_REASON = (StopReason.REAPED, StopReason.WORKER_LOST)


def runs_apply_repricing(*, rows, entries) -> tuple[int, int]:
    """Add each row delta to its run row (``task_id`` "") or its delegated row, and each repriced
    entry to the assistant turn whose share held it. Returns (rows updated, turns updated)."""
    updated = 0
    for row in rows:
        if not row.task_id:
            stop_reason = (
                Run.objects.filter(pk=row.root_run_id).values_list("stop_reason", flat=True).first()
            )
            updated += Run.objects.filter(pk=row.root_run_id).update(
                cost_usd=F("cost_usd") + row.delta_usd,
                cost_is_partial=row.still_unpriced or stop_reason in FLOOR_FOR_ANOTHER_REASON,
            )
            continue
        updated += (
            Run.objects.filter(subagent_task_id=row.task_id, parent_run__isnull=False)
            .filter(_in_tree(row.root_run_id))
            .update(cost_usd=F("cost_usd") + row.delta_usd, cost_is_partial=row.still_unpriced)
        )
    return updated, _reprice_turns(entries)


def _in_tree(root_id: int) -> Q:
    # A delegated row's parent is its nearest published ancestor's row; delegation nests at most
    # three levels (the subagents capability's max_depth ≤ 3).
    return (
        Q(parent_run_id=root_id)
        | Q(parent_run__parent_run_id=root_id)
        | Q(parent_run__parent_run__parent_run_id=root_id)
    )


def _reprice_turns(entries) -> int:
    """Each assistant turn holds its run's spend since the turn before: an entry belongs to the
    first turn of its run written at or after it. Its share grows by the entry's new price, and
    its floor mark is cleared when no unpriced entry of its span remains."""
    by_run = defaultdict(list)
    for entry in entries:
        by_run[entry.run_id].append(entry)
    updated = 0
    for run_id, items in by_run.items():
        turns = list(
            Message.objects.filter(run_id=run_id, role=MessageRole.ASSISTANT).order_by(
                "created_at", "pk"
            )
        )
        if not turns:
            continue
        deltas: dict[int, Decimal] = defaultdict(lambda: ZERO)
        for entry in items:
            turn = next((t for t in turns if t.created_at >= entry.created_at), turns[-1])
            deltas[turn.pk] += entry.cost_usd
        ledger_id = items[0].ledger_id
        previous_end = None
        for turn in turns:
            span = LedgerEntry.objects.filter(ledger_id=ledger_id, priced=False)
            span = span.filter(created_at__lte=turn.created_at)
            if previous_end is not None:
                span = span.filter(created_at__gt=previous_end)
            if turn.pk in deltas and turn.cost_usd is not None:  # NULL: never recorded
                Message.objects.filter(pk=turn.pk).update(
                    cost_usd=F("cost_usd") + deltas[turn.pk], cost_is_partial=span.exists()
                )
                updated += 1
            previous_end = turn.created_at
    return updated
