"""What the ledger holds for a run, as the fields of its row: the one source a run's totals are
brought up to (its end, a late delegation's booking, the lease sweep) and what the API shows
while the row is not final yet (in flight, parked, or still accruing)."""

from __future__ import annotations

from django.db.models import Count, Q, Sum

from apps.spend.models import EntryKind, Ledger, LedgerEntry

from .choices import TERMINAL_STATUSES
from .models import Run


def ledger_totals(run_id: int) -> dict:
    """A run's totals as its ledger holds them (every request of its tree, delegates included),
    as the fields of its row; empty when it has no ledger."""
    ledger = Ledger.objects.filter(run_id=run_id).first()
    if ledger is None:
        return {}
    return {
        "cost_usd": ledger.cost_usd,
        "cost_is_partial": ledger.cost_is_partial,
        "input_tokens": ledger.input_tokens,
        "output_tokens": ledger.output_tokens,
        "request_count": ledger.request_count,
    }


def delegated_totals(run, task_id: str) -> dict:
    """A delegation's own spend: its entries of the run's one ledger (every segment's)."""
    root_id = run if isinstance(run, int) else run.pk
    return LedgerEntry.objects.filter(ledger__run_id=root_id, billed_delegation=task_id).aggregate(
        cost=Sum("cost_usd"),
        input=Sum("input_tokens"),
        output=Sum("output_tokens"),
        requests=Count("pk", filter=Q(kind=EntryKind.MODEL_REQUEST)),
        unpriced=Count("pk", filter=Q(priced=False)),
    )


def in_flight_totals(run: Run) -> dict:
    """The totals a row that is not final yet shows: what its ledger already holds (a top-level
    run: its whole tree; a delegated row still running: its own entries of its root's ledger).
    Empty for a final row, whose own fields are the figure."""
    if run.status in TERMINAL_STATUSES and not run.accruing:
        return {}
    if run.parent_run_id is None:
        return ledger_totals(run.pk)
    root_id = run.parent_run_id
    while True:
        above = Run.objects.filter(pk=root_id).values_list("parent_run_id", flat=True).first()
        if above is None:
            break
        root_id = above
    totals = delegated_totals(root_id, run.subagent_task_id)
    if not totals["requests"]:
        return {}
    return {
        "cost_usd": totals["cost"],
        "cost_is_partial": bool(totals["unpriced"]),
        "input_tokens": totals["input"] or 0,
        "output_tokens": totals["output"] or 0,
        "request_count": totals["requests"],
    }
