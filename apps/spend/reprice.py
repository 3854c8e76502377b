"""Repricing a floor: ledger entries booked at $0 because no price was known, priced again from
their stored tokens once one is — a newer genai-prices snapshot, or an operator's ``ModelPrice``
for a custom model from the date it applies.

What moves, in one transaction per organization: each entry (its cost, ``priced``), its run's
ledger and the budget counters of the entry's month (a counter is a cache of the ledger) — written
here — and the run row, every delegated row it bills to (their ``cost_usd``; ``cost_is_partial``
cleared where every entry of the row is now priced) and the assistant turns whose share held the
entry: those rows belong to the runs app, which sits above spend, so repricing computes their
deltas and hands them to the hook runs registers (``on_runs_repriced``), inside the same
transaction; spend never writes a Run or a Message. One
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
from django.db.models import F
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


@dataclass(frozen=True)
class RowDelta:
    """What repricing adds to one run row: the run's own (``task_id`` "") or one delegated row
    of its tree (the delegation's task id), and whether an entry of it is still unpriced."""

    root_run_id: int
    task_id: str
    delta_usd: Decimal
    still_unpriced: bool


@dataclass(frozen=True)
class EntryDelta:
    """One repriced entry of a run's ledger, for the assistant turn whose share held it."""

    run_id: int
    ledger_id: int
    created_at: dt.datetime
    cost_usd: Decimal


# The runs app applies the row and turn deltas (apps.runs.services.runs_apply_repricing),
# registered from its AppConfig.ready(): hook(rows=[RowDelta], entries=[EntryDelta]) -> (rows
# updated, turns updated), called inside repricing's transaction.
_RUNS_REPRICED_HOOKS: list = []


def on_runs_repriced(hook) -> None:
    if hook not in _RUNS_REPRICED_HOOKS:
        _RUNS_REPRICED_HOOKS.append(hook)


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
    """Write one organization's repricing of the ledger and its counters, and hand the runs app
    the deltas of its rows; returns (rows updated, turns updated)."""
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
    rows: list[RowDelta] = []
    for ledger_id, delta in ledger_delta.items():
        still_unpriced = LedgerEntry.objects.filter(ledger_id=ledger_id, priced=False).exists()
        Ledger.objects.filter(pk=ledger_id).update(
            cost_usd=F("cost_usd") + delta, cost_is_partial=still_unpriced
        )
        rows.append(RowDelta(ledgers[ledger_id].run_id, "", delta, still_unpriced))
    for (ledger_id, task_id), delta in delegated_delta.items():
        still_unpriced = LedgerEntry.objects.filter(
            ledger_id=ledger_id, billed_delegation=task_id, priced=False
        ).exists()
        rows.append(RowDelta(ledgers[ledger_id].run_id, task_id, delta, still_unpriced))
    entries = [
        EntryDelta(ledgers[entry.ledger_id].run_id, entry.ledger_id, entry.created_at, cost)
        for entry, cost, _ in priced
        if entry.ledger_id is not None
    ]
    for (organization_id, agent_id, month), delta in counter_delta.items():
        counters = BudgetCounter.objects.filter(organization_id=organization_id, month=month)
        if agent_id is None:
            counters = counters.filter(scope=BudgetScope.ORGANIZATION)
        else:
            counters = counters.filter(scope=BudgetScope.AGENT, agent_id=agent_id)
        counters.update(committed_usd=F("committed_usd") + delta)
    updated_rows = updated_turns = 0
    for hook in _RUNS_REPRICED_HOOKS:
        done_rows, done_turns = hook(rows=rows, entries=entries)
        updated_rows += done_rows
        updated_turns += done_turns
    return updated_rows, updated_turns
