"""Repricing a floor: ledger entries booked at $0 because no price was known, priced again from
their stored tokens once one is — a newer genai-prices snapshot, or an operator's ``ModelPrice``
for a custom model from the date it applies.

What moves, in one transaction per organization: each entry (its cost, ``priced``), its run's
ledger, the run row and every delegated row it bills to (their ``cost_usd``; ``cost_is_partial``
cleared where every entry of the row is now priced), the assistant turns whose share held the
entry, and the budget counters of the entry's month (a counter is a cache of the ledger). One
audit entry per organization and model names the model, the price source and the totals before
and after.

What does not: caps are not re-enforced retroactively. A run that went past a cap because its
model was unpriced stays as it ended; the counters hold the repriced spend, so the current
month's cap binds on it from the next request.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections import defaultdict
from dataclasses import dataclass, field
from decimal import Decimal

from django.apps import apps
from django.db import transaction
from django.db.models import F, Q
from genai_prices import Usage, calc_price

from apps.audit.services import record_audit

from .models import BudgetCounter, BudgetScope, Ledger, LedgerEntry, ModelPrice
from .pricing import GENAI_PROVIDER_IDS, LOCAL_PROVIDER

logger = logging.getLogger(__name__)
ZERO = Decimal("0")
NOT_RETROACTIVE = (
    "Caps are not re-enforced retroactively: runs that went past a cap while their model was "
    "unpriced stay as they ended. The month's counters now hold the repriced spend, so a cap "
    "binds on it from the next request."
)
# A row ended by the stale-run reaper or the lease sweep is a floor for another reason (a
# request in flight when its worker died may have been billed and never booked): pricing its
# entries does not make it exact.
_FLOOR_FOR_ANOTHER_REASON = ("reaped", "worker_lost")


@dataclass
class ModelTotals:
    """What repricing one model did (or would do) in one organization."""

    provider: str
    model_name: str
    source: str = ""  # "genai-prices <version>" | "operator price #<id> from <date>" | "" (none)
    entries: int = 0
    priced_entries: int = 0
    before_usd: Decimal = ZERO
    after_usd: Decimal = ZERO


@dataclass
class RepriceReport:
    dry_run: bool
    since: dt.datetime
    until: dt.datetime
    # (organization id, provider, model) → totals
    models: dict[tuple[int, str, str], ModelTotals] = field(default_factory=dict)
    organization_totals: dict[int, tuple[Decimal, Decimal]] = field(default_factory=dict)
    runs_updated: int = 0
    messages_updated: int = 0

    @property
    def priced_entries(self) -> int:
        return sum(t.priced_entries for t in self.models.values())

    @property
    def unpriced_entries(self) -> int:
        return sum(t.entries - t.priced_entries for t in self.models.values())


def _snapshot_version() -> str:
    try:
        from importlib.metadata import version

        return f"genai-prices {version('genai-prices')}"
    except Exception:  # an unusual install without metadata still names its source
        return "genai-prices"


def _snapshot_price(entry: LedgerEntry) -> Decimal | None:
    try:
        result = calc_price(
            Usage(input_tokens=entry.input_tokens, output_tokens=entry.output_tokens),
            model_ref=entry.model_name,
            provider_id=GENAI_PROVIDER_IDS.get(entry.provider, entry.provider),
        )
    except LookupError:
        return None
    return Decimal(result.total_price)


def _operator_price(prices: list[ModelPrice], entry: LedgerEntry) -> ModelPrice | None:
    day = entry.created_at.astimezone(dt.UTC).date()
    candidates = [
        p
        for p in prices
        if p.model_name == entry.model_name
        and p.provider in ("", entry.provider)
        and p.applies_from <= day
    ]
    # The latest entry that applies; a provider-specific one before a wildcard of the same day.
    candidates.sort(key=lambda p: (p.applies_from, p.provider != ""), reverse=True)
    return candidates[0] if candidates else None


def _price(entry: LedgerEntry, prices: list[ModelPrice], snapshot: str) -> tuple[Decimal, str]:
    cost = _snapshot_price(entry)
    if cost is not None:
        return cost, snapshot
    operator = _operator_price(prices, entry)
    if operator is not None:
        return (
            operator.cost_usd(entry.input_tokens, entry.output_tokens),
            f"operator price #{operator.pk} from {operator.applies_from.isoformat()}",
        )
    return ZERO, ""


def reprice(
    *,
    since: dt.datetime,
    until: dt.datetime,
    organization=None,
    dry_run: bool = False,
) -> RepriceReport:
    """Price again every unpriced entry booked in [since, until] (of one organization, or all)."""
    entries = LedgerEntry.objects.filter(
        priced=False, created_at__gte=since, created_at__lte=until
    ).exclude(provider__in=("offline", LOCAL_PROVIDER))
    if organization is not None:
        entries = entries.filter(organization=organization)
    report = RepriceReport(dry_run=dry_run, since=since, until=until)
    prices = list(ModelPrice.objects.all())
    snapshot = _snapshot_version()
    by_org: dict[int, list[tuple[LedgerEntry, Decimal, str]]] = defaultdict(list)
    for entry in entries.order_by("organization_id", "created_at", "pk").iterator():
        cost, source = _price(entry, prices, snapshot)
        key = (entry.organization_id, entry.provider, entry.model_name)
        totals = report.models.setdefault(key, ModelTotals(entry.provider, entry.model_name))
        totals.entries += 1
        if source:
            totals.priced_entries += 1
            totals.after_usd += cost
            # One model may be priced by several operator entries (dates): the last one named.
            totals.source = source if not totals.source else totals.source
            by_org[entry.organization_id].append((entry, cost, source))
    Organization = apps.get_model("orgs", "Organization")
    for organization_id, priced in by_org.items():
        before = _organization_month_totals(organization_id, priced)
        report.organization_totals[organization_id] = (
            before,
            before + sum((cost for _, cost, _ in priced), ZERO),
        )
        if dry_run:
            continue
        with transaction.atomic():
            runs, messages = _apply(priced)
            report.runs_updated += runs
            report.messages_updated += messages
            org = Organization.objects.get(pk=organization_id)
            for (org_id, provider, model_name), totals in report.models.items():
                if org_id != organization_id or not totals.priced_entries:
                    continue
                record_audit(
                    actor=None,
                    organization=org,
                    action="spend.reprice",
                    subject=org,
                    details={
                        "by": "agenticos reprice",
                        "provider": provider,
                        "model": model_name,
                        "price_source": totals.source,
                        "window": {"from": since.isoformat(), "to": until.isoformat()},
                        "entries_repriced": totals.priced_entries,
                        "entries_still_unpriced": totals.entries - totals.priced_entries,
                        "before_usd": str(totals.before_usd),
                        "after_usd": str(totals.after_usd),
                        "caps": "not re-enforced retroactively",
                    },
                )
    return report


def _organization_month_totals(organization_id: int, priced) -> Decimal:
    """What the touched months of the organization held before: the sum of their entries."""
    months = {entry.month for entry, _, _ in priced}
    total = ZERO
    for entry in LedgerEntry.objects.filter(organization_id=organization_id, month__in=months):
        total += entry.cost_usd
    return total


def _apply(priced: list[tuple[LedgerEntry, Decimal, str]]) -> tuple[int, int]:
    """Write one organization's repricing; returns (rows updated, turns updated)."""
    Run = apps.get_model("runs", "Run")
    Message = apps.get_model("runs", "Message")
    ledger_delta: dict[int, Decimal] = defaultdict(lambda: ZERO)
    # (ledger id, billed delegation task id) → delta: the delegated row an entry bills to.
    delegated_delta: dict[tuple[int, str], Decimal] = defaultdict(lambda: ZERO)
    counter_delta: dict[tuple[int, int | None, dt.date], Decimal] = defaultdict(lambda: ZERO)
    for entry, cost, _ in priced:
        LedgerEntry.objects.filter(pk=entry.pk, priced=False).update(cost_usd=cost, priced=True)
        counter_delta[(entry.organization_id, None, entry.month)] += cost
        if entry.ledger_id is not None:
            ledger_delta[entry.ledger_id] += cost
            if entry.billed_delegation:
                delegated_delta[(entry.ledger_id, entry.billed_delegation)] += cost
    ledgers = {ledger.pk: ledger for ledger in Ledger.objects.filter(pk__in=ledger_delta)}
    for entry, cost, _ in priced:
        if entry.ledger_id is not None:
            # An agent's cap counts the entries of the runs it started (their ledger's agent).
            counter_delta[
                (entry.organization_id, ledgers[entry.ledger_id].agent_id, entry.month)
            ] += cost
    rows = 0
    for ledger_id, delta in ledger_delta.items():
        still_unpriced = LedgerEntry.objects.filter(ledger_id=ledger_id, priced=False).exists()
        Ledger.objects.filter(pk=ledger_id).update(
            cost_usd=F("cost_usd") + delta, cost_is_partial=still_unpriced
        )
        run_id = ledgers[ledger_id].run_id
        stop_reason = Run.objects.filter(pk=run_id).values_list("stop_reason", flat=True).first()
        if stop_reason is None and not Run.objects.filter(pk=run_id).exists():
            continue
        Run.objects.filter(pk=run_id).update(
            cost_usd=F("cost_usd") + delta,
            cost_is_partial=still_unpriced or stop_reason in _FLOOR_FOR_ANOTHER_REASON,
        )
        rows += 1
    for (ledger_id, task_id), delta in delegated_delta.items():
        still_unpriced = LedgerEntry.objects.filter(
            ledger_id=ledger_id, billed_delegation=task_id, priced=False
        ).exists()
        root_id = ledgers[ledger_id].run_id
        rows += (
            Run.objects.filter(
                organization_id=ledgers[ledger_id].organization_id,
                subagent_task_id=task_id,
                parent_run__isnull=False,
            )
            .filter(_in_tree(root_id))
            .update(cost_usd=F("cost_usd") + delta, cost_is_partial=still_unpriced)
        )
    turns = _reprice_turns(Message, priced, ledgers)
    for (organization_id, agent_id, month), delta in counter_delta.items():
        counters = BudgetCounter.objects.filter(organization_id=organization_id, month=month)
        if agent_id is None:
            counters = counters.filter(scope=BudgetScope.ORGANIZATION)
        else:
            counters = counters.filter(scope=BudgetScope.AGENT, agent_id=agent_id)
        counters.update(committed_usd=F("committed_usd") + delta)
    return rows, turns


def _in_tree(root_id: int) -> Q:
    # A delegated row's parent is its nearest published ancestor's row; delegation nests at most
    # three levels (the subagents capability's max_depth ≤ 3).
    return (
        Q(parent_run_id=root_id)
        | Q(parent_run__parent_run_id=root_id)
        | Q(parent_run__parent_run__parent_run_id=root_id)
    )


def _reprice_turns(Message, priced, ledgers) -> int:
    """Each assistant turn holds its run's spend since the turn before: an entry belongs to the
    first turn of its run written at or after it. Its share grows by the entry's new price, and
    its floor mark is cleared when no unpriced entry of its span remains."""
    by_run: dict[int, list[tuple[LedgerEntry, Decimal]]] = defaultdict(list)
    for entry, cost, _ in priced:
        if entry.ledger_id is not None:
            by_run[ledgers[entry.ledger_id].run_id].append((entry, cost))
    updated = 0
    for run_id, items in by_run.items():
        turns = list(
            Message.objects.filter(run_id=run_id, role="assistant").order_by("created_at", "pk")
        )
        if not turns:
            continue
        deltas: dict[int, Decimal] = defaultdict(lambda: ZERO)
        for entry, cost in items:
            turn = next((t for t in turns if t.created_at >= entry.created_at), turns[-1])
            deltas[turn.pk] += cost
        ledger_id = ledgers[items[0][0].ledger_id].pk
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
