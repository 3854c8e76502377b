"""Every write of the spend app: ledgers, priced entries and the budget counters.

The caps (seed 003, "Budgets"): an agent's monthly cap measures that agent's spend; the
organization's monthly cap measures every run and ingestion of the organization. They are never
folded with min(): each is checked against its own counter and a refusal names the one that
bound. The counters are rows locked with SELECT … FOR UPDATE, shared by every worker, so a
request reserves its estimate before it is sent and concurrent runs see each other's in-flight
requests (docs/budgets.md states the bound this gives).
"""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass
from decimal import ROUND_UP, Decimal

from django.db import IntegrityError, connection, transaction
from django.db.models import Sum
from django.db.models.functions import Coalesce
from django.utils import timezone

from .models import BudgetCounter, BudgetScope, EntryKind, Ledger, LedgerEntry
from .pricing import price_usage

logger = logging.getLogger(__name__)
ZERO = Decimal("0")


def month_of(moment: dt.datetime | None = None) -> dt.date:
    """The UTC calendar month a moment falls in, as its first day."""
    moment = (moment or timezone.now()).astimezone(dt.UTC)
    return dt.date(moment.year, moment.month, 1)


def _usd(value: Decimal, places: str = "0.01") -> str:
    return str(value.quantize(Decimal(places), rounding=ROUND_UP))


class BudgetExceeded(Exception):
    """A monthly cap refused a model request before it was sent."""

    def __init__(self, *, scope: str, limit_usd: Decimal, spent_usd: Decimal) -> None:
        self.scope = scope
        self.limit_usd = limit_usd
        self.spent_usd = spent_usd
        super().__init__(self.sentence)

    @property
    def sentence(self) -> str:
        whose = "This agent's" if self.scope == BudgetScope.AGENT else "The organization's"
        return (
            f"{whose} monthly budget of ${_usd(self.limit_usd)} is used up: "
            f"${_usd(self.spent_usd, '0.0001')} spent this month (UTC)."
        )

    def as_dict(self) -> dict:
        return {
            "scope": str(self.scope),
            "limit_usd": str(Decimal(self.limit_usd).quantize(Decimal("0.01"))),
            "spent_usd": str(self.spent_usd),
        }


# --- counters -----------------------------------------------------------------------------------


def _entries_sum(**filters) -> Decimal:
    return LedgerEntry.objects.filter(**filters).aggregate(total=Coalesce(Sum("cost_usd"), ZERO))["total"]


def budget_counter_for(*, organization_id: int, agent_id: int | None, month: dt.date) -> BudgetCounter:
    """The counter of one scope and month, created on first use and seeded from the ledger entries
    already booked in it (so the counter is a cache of the ledger, never a second truth)."""
    if agent_id is None:
        lookup = {"scope": BudgetScope.ORGANIZATION, "organization_id": organization_id, "agent": None, "month": month}
        seed_filter = {"organization_id": organization_id, "month": month}
    else:
        lookup = {"scope": BudgetScope.AGENT, "organization_id": organization_id, "agent_id": agent_id, "month": month}
        seed_filter = {"agent_id": agent_id, "month": month}
    counter = BudgetCounter.objects.filter(**lookup).first()
    if counter is not None:
        return counter
    try:
        with transaction.atomic():
            return BudgetCounter.objects.create(**lookup, committed_usd=_entries_sum(**seed_filter))
    except IntegrityError:  # another worker created it first
        return BudgetCounter.objects.get(**lookup)


@dataclass(frozen=True)
class Cap:
    """One monthly cap and the counter it is measured against."""

    scope: str
    limit_usd: Decimal | None
    counter_id: int


# One statement each, so the hot path is one round trip per move (docs/budgets.md, "Cost").
# Rows are always locked in id order (the ordered FOR UPDATE subquery), so two runs sharing the
# organization's counter never deadlock.
_RESERVE_SQL = """
WITH caps AS (
    SELECT * FROM unnest(%(ids)s::bigint[], %(limits)s::numeric[]) AS cap(id, limit_usd)
), locked AS (
    SELECT id, committed_usd + reserved_usd AS spent
    FROM spend_budgetcounter WHERE id = ANY(%(ids)s) ORDER BY id FOR UPDATE
), refused AS (
    SELECT locked.id, locked.spent FROM locked JOIN caps USING (id)
    WHERE caps.limit_usd IS NOT NULL AND locked.spent >= caps.limit_usd
), reserved AS (
    UPDATE spend_budgetcounter SET reserved_usd = reserved_usd + %(estimate)s
    WHERE id IN (SELECT id FROM locked) AND NOT EXISTS (SELECT 1 FROM refused)
    RETURNING id
)
SELECT id, spent FROM refused
"""

_RELEASE_SQL = """
UPDATE spend_budgetcounter SET reserved_usd = reserved_usd - %(reserved)s
WHERE id IN (SELECT id FROM spend_budgetcounter WHERE id = ANY(%(ids)s) ORDER BY id FOR UPDATE)
"""

_SETTLE_SQL = """
WITH entry AS (
    INSERT INTO spend_ledgerentry (ledger_id, organization_id, agent_id, kind, provider, model_name,
        input_tokens, output_tokens, cost_usd, priced, month, created_at)
    VALUES (%(ledger)s, %(organization)s, %(agent)s, %(kind)s, %(provider)s, %(model)s,
        %(input)s, %(output)s, %(cost)s, %(priced)s, %(month)s, now())
    RETURNING id
), counters AS (
    UPDATE spend_budgetcounter
    SET committed_usd = committed_usd + %(cost)s, reserved_usd = reserved_usd - %(reserved)s, updated_at = now()
    WHERE id IN (SELECT id FROM spend_budgetcounter WHERE id = ANY(%(ids)s) ORDER BY id FOR UPDATE)
    RETURNING id
), ledger AS (
    UPDATE spend_ledger
    SET cost_usd = cost_usd + %(cost)s, input_tokens = input_tokens + %(input)s,
        output_tokens = output_tokens + %(output)s, request_count = request_count + %(requests)s,
        cost_is_partial = cost_is_partial OR NOT %(priced)s, updated_at = now()
    WHERE id = %(ledger)s
    RETURNING id
)
SELECT (SELECT count(*) FROM entry), (SELECT count(*) FROM counters), (SELECT count(*) FROM ledger)
"""


def budget_reserve(caps: list[Cap], estimate_usd: Decimal) -> None:
    """Check every cap against its own counter and reserve ``estimate_usd`` on all of them, in one
    statement holding the counters' row locks; raise BudgetExceeded naming the cap that bound.

    Spent is committed + reserved: the other runs' settled requests, this run's own ledger (its
    entries are in the counter once, so a resumed run is not counted twice) and every request
    still in flight.
    """
    params = {
        "ids": [cap.counter_id for cap in caps],
        "limits": [cap.limit_usd for cap in caps],
        "estimate": estimate_usd,
    }
    with connection.cursor() as cursor:
        cursor.execute(_RESERVE_SQL, params)
        refused = dict(cursor.fetchall())
    for cap in caps:  # the agent's cap first: the more specific one names itself when both bind
        if cap.counter_id in refused:
            raise BudgetExceeded(scope=cap.scope, limit_usd=cap.limit_usd, spent_usd=refused[cap.counter_id])


def budget_release(counter_ids: list[int], reserved_usd: Decimal) -> None:
    """Give back a reservation whose request never produced a response."""
    with connection.cursor() as cursor:
        cursor.execute(_RELEASE_SQL, {"ids": counter_ids, "reserved": reserved_usd})


# --- the ledger ---------------------------------------------------------------------------------


def ledger_open(*, run) -> Ledger:
    """The run's one ledger; a resumed run finds the one it had, with everything it spent."""
    ledger, _ = Ledger.objects.get_or_create(
        run=run, defaults={"organization_id": run.organization_id, "agent_id": run.agent_id}
    )
    return ledger


@dataclass(frozen=True)
class Charge:
    cost_usd: Decimal
    priced: bool
    input_tokens: int
    output_tokens: int


def charge_record(
    *,
    organization_id: int,
    agent_id: int | None,
    ledger_id: int | None,
    counter_ids: list[int],
    month: dt.date,
    kind: str,
    provider: str,
    model_name: str,
    input_tokens: int,
    output_tokens: int,
    reserved_usd: Decimal = ZERO,
) -> Charge:
    """Price one charge and book it: the entry, the run's ledger and the counters, atomically.

    ``reserved_usd`` is the estimate reserved for it, released in the same write (settle).
    """
    price = price_usage(provider, model_name, input_tokens, output_tokens)
    with connection.cursor() as cursor:
        cursor.execute(
            _SETTLE_SQL,
            {
                "ledger": ledger_id,
                "organization": organization_id,
                "agent": agent_id,
                "kind": kind,
                "provider": provider,
                "model": model_name,
                "input": input_tokens,
                "output": output_tokens,
                "cost": price.cost_usd,
                "priced": price.priced,
                "month": month,
                "ids": counter_ids,
                "reserved": reserved_usd,
                "requests": 1 if kind == EntryKind.MODEL_REQUEST else 0,
            },
        )
    return Charge(price.cost_usd, price.priced, input_tokens, output_tokens)


def ingestion_charge_record(
    *, organization, provider: str, model_name: str, input_tokens: int, output_tokens: int = 0
) -> Charge:
    """Book an ingestion job's spend against the organization's cap (it belongs to no run)."""
    month = month_of()
    counter = budget_counter_for(organization_id=organization.pk, agent_id=None, month=month)
    return charge_record(
        organization_id=organization.pk,
        agent_id=None,
        ledger_id=None,
        counter_ids=[counter.pk],
        month=month,
        kind=EntryKind.INGESTION,
        provider=provider,
        model_name=model_name,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
    )


def budget_counters_reconcile(*, organization_id: int, busy_agent_ids: set[int], month: dt.date) -> int:
    """Repair what a dead worker left: recompute committed spend from the ledger entries and drop
    reservations of scopes with no live run. Called by the stale-run reaper; returns rows fixed."""
    fixed = 0
    for counter in BudgetCounter.objects.filter(organization_id=organization_id, month=month):
        if counter.scope == BudgetScope.AGENT:
            committed = _entries_sum(agent_id=counter.agent_id, month=month)
            idle = counter.agent_id not in busy_agent_ids
        else:
            committed = _entries_sum(organization_id=organization_id, month=month)
            idle = not busy_agent_ids
        if not idle:
            continue  # a live run may be settling right now; its own writes keep the row right
        changes = {}
        if committed != counter.committed_usd:
            changes["committed_usd"] = committed
        if counter.reserved_usd != ZERO:
            changes["reserved_usd"] = ZERO
        if changes:
            BudgetCounter.objects.filter(pk=counter.pk).update(**changes)
            fixed += 1
    return fixed
