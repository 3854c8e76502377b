"""Every write of the spend app: ledgers, priced entries and the budget counters.

The caps (seed 003, "Budgets"): an agent's monthly cap measures that agent's spend; the
organization's monthly cap measures every run and ingestion of the organization. They are never
folded with min(): each is checked against its own counter and a refusal names the one that
bound. The counters are rows locked with SELECT … FOR UPDATE, shared by every worker, so a
request reserves its estimate before it is sent and concurrent runs see each other's in-flight
requests (docs/budgets.md states the bound this gives).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import ROUND_UP, Decimal
from typing import Generic, TypeVar

from django.db import IntegrityError, connection, transaction
from django.db.models import Sum
from django.db.models.functions import Coalesce
from django.utils import timezone
from psycopg.types.numeric import Int8

from agenticos.loopdb import LoopSession, Statement
from agenticos.money import budget_warn_at_checked
from apps.audit.services import record_audit

from .models import BudgetCounter, BudgetScope, EntryKind, Ledger, LedgerEntry
from .pricing import price_usage

logger = logging.getLogger(__name__)
ZERO = Decimal("0")
T = TypeVar("T")


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
    return LedgerEntry.objects.filter(**filters).aggregate(total=Coalesce(Sum("cost_usd"), ZERO))[
        "total"
    ]


def _counter_lookup(
    organization_id: int, agent_id: int | None, month: dt.date
) -> tuple[dict, dict]:
    """The counter's row of one scope and month, and the ledger entries it is seeded from."""
    if agent_id is None:
        lookup = {
            "scope": BudgetScope.ORGANIZATION,
            "organization_id": organization_id,
            "agent": None,
            "month": month,
        }
        return lookup, {"organization_id": organization_id, "month": month}
    lookup = {
        "scope": BudgetScope.AGENT,
        "organization_id": organization_id,
        "agent_id": agent_id,
        "month": month,
    }
    # An agent's cap measures the runs it started, their delegates' requests included (one
    # ledger per run, seed 003 "La delegación gasta el budget del padre"): entries are
    # counted by their ledger's agent, not by the agent an entry bills to.
    return lookup, {"ledger__agent_id": agent_id, "month": month}


def budget_counter_for(
    *, organization_id: int, agent_id: int | None, month: dt.date
) -> BudgetCounter:
    """The counter of one scope and month, created on first use and seeded from the ledger entries
    already booked in it (so the counter is a cache of the ledger, never a second truth)."""
    lookup, seed_filter = _counter_lookup(organization_id, agent_id, month)
    counter = BudgetCounter.objects.filter(**lookup).first()
    if counter is not None:
        return counter
    try:
        with transaction.atomic():
            return BudgetCounter.objects.create(**lookup, committed_usd=_entries_sum(**seed_filter))
    except IntegrityError:  # another worker created it first
        return BudgetCounter.objects.get(**lookup)


_COUNTERS_OF_A_RUN = Statement(
    "spend_counters_of_a_run",
    f"""SELECT id, scope FROM "{BudgetCounter._meta.db_table}"
    WHERE organization_id = %(organization)s AND month = %(month)s
      AND ((scope = %(agent_scope)s AND agent_id = %(agent)s)
        OR (scope = %(organization_scope)s AND agent_id IS NULL))
    ORDER BY id""",
)


def budget_counter_ids_for(
    *, organization_id: int, agent_id: int, month: dt.date
) -> tuple[int, int]:
    """The ids of the agent's and the organization's counters of ``month``, in one read (every
    run opening its meter needs both; a constant statement, not a query built per run). One not
    there yet is created as ``budget_counter_for`` creates it."""
    rows = _execute_hot(
        _COUNTERS_OF_A_RUN,
        {
            "organization": organization_id,
            "month": month,
            "agent": agent_id,
            "agent_scope": BudgetScope.AGENT.value,
            "organization_scope": BudgetScope.ORGANIZATION.value,
        },
    )
    found: dict[str, int] = {}
    for counter_id, scope in rows:
        found.setdefault(scope, counter_id)
    agent = found.get(BudgetScope.AGENT) or (
        budget_counter_for(organization_id=organization_id, agent_id=agent_id, month=month).pk
    )
    org = found.get(BudgetScope.ORGANIZATION) or (
        budget_counter_for(organization_id=organization_id, agent_id=None, month=month).pk
    )
    return agent, org


@dataclass(frozen=True)
class Cap:
    """One monthly cap and the counter it is measured against, with the fractions of it at which
    its audience is warned before it binds (``warn_at``; empty: no warnings)."""

    scope: str
    limit_usd: Decimal | None
    counter_id: int
    warn_at: tuple[Decimal, ...] = ()


@dataclass(frozen=True)
class BudgetWarning:
    """A cap's warning threshold crossed by one booking: the counter, the highest fraction it
    crossed (and every one it crossed, so a lower one is never sent after it), what the scope
    had spent once the booking committed, and the cap."""

    counter_id: int
    scope: str
    fractions: tuple[Decimal, ...]
    spent_usd: Decimal
    limit_usd: Decimal


# Who hears that a booking crossed a cap's warning threshold: apps.notifications (above this app)
# registers in its AppConfig.ready() a receiver that puts its send task on the broker. Spend
# names nothing above itself, not even a task by name (docs/layers.md).
_THRESHOLD_CROSSED_HOOKS: list[Callable[[BudgetWarning], None]] = []


def on_budget_threshold_crossed(hook: Callable[[BudgetWarning], None]) -> None:
    if hook not in _THRESHOLD_CROSSED_HOOKS:
        _THRESHOLD_CROSSED_HOOKS.append(hook)


def crossed_warnings(caps, committed: dict, cost: Decimal) -> list[BudgetWarning]:
    """The warning thresholds a booking of ``cost`` carried each cap across: spent before it was
    below ``fraction × cap`` and spent after it is not. Counted on committed spend — what was
    actually booked — so an estimate in flight never warns."""
    warnings = []
    for cap in caps or ():
        after = committed.get(cap.counter_id)
        if after is None or not cap.warn_at or not cap.limit_usd or cost <= 0:
            continue
        before = after - cost
        limit = Decimal(cap.limit_usd)
        crossed = tuple(f for f in cap.warn_at if before < f * limit <= after)
        if crossed:
            warnings.append(BudgetWarning(cap.counter_id, str(cap.scope), crossed, after, limit))
    return warnings


def warnings_enqueue(warnings: Sequence[BudgetWarning]) -> None:
    """Tell each crossed threshold to the registered receivers; never raises into the booking (a
    run must not fail because the broker is down — the warning is lost and logged, the cap still
    binds)."""
    for warning in warnings:
        for hook in _THRESHOLD_CROSSED_HOOKS:
            try:
                hook(warning)
            except Exception:
                logger.exception("budget warning for counter %s not sent on", warning.counter_id)


# One statement each, so every move is one round trip (docs/budgets.md, "Cost of the guard").
# Rows are always locked in id order (the ordered FOR UPDATE subquery), so two runs sharing the
# organization's counter never deadlock.
#
# Reserve: check every cap against committed + reserved (minus what this run already holds for
# the request, ``held``, which the new reservation replaces) and, only if none is reached, move
# the run's reservation from ``held`` to ``estimate`` on every counter.
_RESERVE = Statement(
    "reserve",
    """
WITH caps AS (
    SELECT * FROM unnest(%(ids)s::bigint[], %(limits)s::numeric[]) AS cap(id, limit_usd)
), locked AS (
    SELECT id, committed_usd + reserved_usd - %(held)s AS spent
    FROM spend_budgetcounter WHERE id = ANY(%(ids)s) ORDER BY id FOR UPDATE
), refused AS (
    SELECT locked.id, locked.spent FROM locked JOIN caps USING (id)
    WHERE caps.limit_usd IS NOT NULL AND locked.spent >= caps.limit_usd
), reserved AS (
    UPDATE spend_budgetcounter SET reserved_usd = reserved_usd - %(held)s + %(estimate)s
    WHERE id IN (SELECT id FROM locked) AND NOT EXISTS (SELECT 1 FROM refused)
    RETURNING id
)
SELECT id, spent FROM refused
""",
)

_RELEASE = Statement(
    "release",
    """
UPDATE spend_budgetcounter SET reserved_usd = reserved_usd - %(reserved)s
WHERE id IN (SELECT id FROM spend_budgetcounter WHERE id = ANY(%(ids)s) ORDER BY id FOR UPDATE)
""",
)

# Settle one charge — the entry, the run's ledger, the counters from reserved to committed — and,
# when ``next`` > 0, reserve the run's next request in the same statement: the same check as
# _RESERVE, against the counters as they are once this charge is booked. Refused, nothing is
# reserved ahead (the charge is booked all the same) and the refused rows are returned.
_SETTLE = Statement(
    "settle",
    """
WITH caps AS (
    SELECT * FROM unnest(%(ids)s::bigint[], %(limits)s::numeric[]) AS cap(id, limit_usd)
), locked AS (
    SELECT id, committed_usd + reserved_usd - %(reserved)s + %(cost)s AS spent
    FROM spend_budgetcounter WHERE id = ANY(%(ids)s) ORDER BY id FOR UPDATE
), refused AS (
    SELECT locked.id, locked.spent FROM locked JOIN caps USING (id)
    WHERE %(next)s > 0 AND caps.limit_usd IS NOT NULL AND locked.spent >= caps.limit_usd
), entry AS (
    INSERT INTO spend_ledgerentry (ledger_id, organization_id, agent_id, kind, provider, model_name,
        input_tokens, output_tokens, cost_usd, priced, month, delegation, billed_delegation,
        created_at)
    VALUES (%(ledger)s, %(organization)s, %(agent)s, %(kind)s, %(provider)s, %(model)s,
        %(input)s, %(output)s, %(cost)s, %(priced)s, %(month)s, %(delegation)s,
        %(billed_delegation)s, now())
    RETURNING id
), counters AS (
    UPDATE spend_budgetcounter
    SET committed_usd = committed_usd + %(cost)s,
        reserved_usd = reserved_usd - %(reserved)s
            + CASE WHEN EXISTS (SELECT 1 FROM refused) THEN 0 ELSE %(next)s END,
        updated_at = now()
    WHERE id IN (SELECT id FROM locked)
    RETURNING id, committed_usd
), ledger AS (
    UPDATE spend_ledger
    SET cost_usd = cost_usd + %(cost)s, input_tokens = input_tokens + %(input)s,
        output_tokens = output_tokens + %(output)s, request_count = request_count + %(requests)s,
        cost_is_partial = cost_is_partial OR NOT %(priced)s, updated_at = now()
    WHERE id = %(ledger)s
    RETURNING id
)
SELECT id, spent, true FROM refused
UNION ALL
SELECT id, committed_usd, false FROM counters
""",
)


def _execute_hot(statement: Statement, params: dict) -> list[tuple]:
    """Run one of the statements above on this thread's Django connection (its transaction, if
    any). Every value is a bound parameter. Not prepared: only the run's own moves are frequent,
    and those are sent prepared from its event loop (Move.run_on)."""
    with connection.cursor() as cursor:
        cursor.execute(statement.sql, params)
        return cursor.fetchall() if cursor.description is not None else []


@dataclass(frozen=True)
class Move(Generic[T]):
    """One move on the counters or the ledger: a statement, its values and what its rows mean.

    ``run()`` sends it on this thread's connection; ``run_on(db)`` sends it from an event loop on
    the session of the thread that owns the run (the budget guard, agenticos/loopdb.py). Either
    way it is one statement, one round trip, and the same outcome."""

    statement: Statement
    params: dict
    outcome: Callable[[list[tuple]], T]

    def run(self) -> T:
        result = self.outcome(_execute_hot(self.statement, self.params))
        warnings_enqueue(getattr(result, "warnings", ()))
        return result

    async def run_on(self, db: LoopSession) -> T:
        result = self.outcome(await db.fetch(self.statement, self.params))
        warnings = getattr(result, "warnings", ())
        if warnings:  # rare (a threshold crossed): the broker is talked to off the run's loop
            await asyncio.to_thread(warnings_enqueue, warnings)
        return result


def _ids(values: list[int]) -> list[Int8]:
    return [Int8(value) for value in values]


def reserve_move(caps: list[Cap], estimate_usd: Decimal, *, held_usd: Decimal = ZERO) -> Move[None]:
    """Check every cap against its own counter and reserve ``estimate_usd`` on all of them, in one
    statement holding the counters' row locks; the outcome raises BudgetExceeded naming the cap
    that bound.

    Spent is committed + reserved: the other runs' settled requests, this run's own ledger (its
    entries are in the counter once, so a resumed run is not counted twice) and every request
    still in flight — less ``held_usd``, what this run already reserved for this same request
    (a reservation made ahead, docs/budgets.md), which the new one replaces. Refused, the
    counters are left as they were.
    """
    params = {
        "ids": _ids([cap.counter_id for cap in caps]),
        "limits": _limits(caps),
        "estimate": Decimal(estimate_usd),
        "held": Decimal(held_usd),
    }
    return Move(_RESERVE, params, lambda rows: _raise_refusal(caps, dict(rows)))


def _limits(caps: list[Cap]) -> list[Decimal | None]:
    return [None if cap.limit_usd is None else Decimal(cap.limit_usd) for cap in caps]


def _refusal(caps: list[Cap], refused: dict) -> BudgetExceeded | None:
    for cap in caps:  # the agent's cap first: the more specific one names itself when both bind
        if cap.counter_id in refused and cap.limit_usd is not None:  # only a capped one refuses
            return BudgetExceeded(
                scope=cap.scope, limit_usd=cap.limit_usd, spent_usd=refused[cap.counter_id]
            )
    return None


def _raise_refusal(caps: list[Cap], refused: dict) -> None:
    refusal = _refusal(caps, refused)
    if refusal is not None:
        raise refusal


def release_move(counter_ids: list[int], reserved_usd: Decimal) -> Move[None]:
    """Give back a reservation whose request never produced a response."""
    return Move(
        _RELEASE, {"ids": _ids(counter_ids), "reserved": Decimal(reserved_usd)}, lambda rows: None
    )


# --- the ledger ---------------------------------------------------------------------------------


_LEDGER_OPEN = Statement(
    "spend_ledger_open",
    f"""INSERT INTO "{Ledger._meta.db_table}"
        (run_id, organization_id, agent_id, cost_usd, cost_is_partial, input_tokens,
         output_tokens, request_count, created_at, updated_at)
    VALUES (%(run)s, %(organization)s, %(agent)s, %(cost_usd)s, %(cost_is_partial)s,
            %(input_tokens)s, %(output_tokens)s, %(request_count)s, %(now)s, %(now)s)
    RETURNING id""",
)


def ledger_open(*, run) -> Ledger:
    """The run's one ledger; a resumed run finds the one it had, with everything it spent.

    A run read with its ledger joined (the worker's claim) is not asked again: it has one, or it
    is new and its claim is the only writer, so the ledger is created without a look first."""
    joined = type(run).ledger.is_cached(run)
    if joined:
        ledger = getattr(run, "ledger", None)  # the join found none: None, not a query
        if ledger is not None:
            return ledger
        now = timezone.now()
        ledger = Ledger(
            run=run,
            organization_id=run.organization_id,
            agent_id=run.agent_id,
            created_at=now,
            updated_at=now,
        )
        # A constant statement: every run a worker starts opens one (docs/runner.md).
        [(ledger.pk,)] = _execute_hot(
            _LEDGER_OPEN,
            {
                "run": run.pk,
                "organization": run.organization_id,
                "agent": run.agent_id,
                "cost_usd": ledger.cost_usd,
                "cost_is_partial": ledger.cost_is_partial,
                "input_tokens": ledger.input_tokens,
                "output_tokens": ledger.output_tokens,
                "request_count": ledger.request_count,
                "now": now,
            },
        )
        ledger._state.adding = False
        return ledger
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
    # Set when a reservation for the next request was asked and a cap refused it.
    next_refused: BudgetExceeded | None = None
    # BudgetWarning thresholds this booking crossed (enqueued by the move once it has run).
    warnings: tuple[BudgetWarning, ...] = ()


def charge_move(
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
    next_caps: list[Cap] | None = None,
    next_reserve_usd: Decimal = ZERO,
    delegation: str = "",
    billed_delegation: str = "",
    warn_caps: list[Cap] | None = None,
) -> Move[Charge]:
    """Price one charge and book it: the entry, the run's ledger and the counters, atomically.

    ``reserved_usd`` is the estimate reserved for it, released in the same write (settle). With
    ``next_caps`` (the same counters, with their limits) and ``next_reserve_usd`` > 0, the same
    statement reserves the run's next request as reserve_move would, once this charge is
    booked; a refusal is returned in ``next_refused``, never raised: the charge is booked anyway.
    ``warn_caps`` (the same counters with their limits and warning fractions; ``next_caps`` when
    given) are checked against the counters as this charge leaves them: a warning threshold
    crossed is enqueued, never sent inline.
    ``delegation`` / ``billed_delegation`` stamp an entry a delegate booked into its run's ledger
    (``agent_id`` is then the agent of the row it bills to).
    """
    price = price_usage(provider, model_name, input_tokens, output_tokens)
    if next_caps is not None:
        assert [cap.counter_id for cap in next_caps] == list(counter_ids)
    params = {
        "ledger": None if ledger_id is None else Int8(ledger_id),
        "organization": Int8(organization_id),
        "agent": None if agent_id is None else Int8(agent_id),
        "kind": str(kind),
        "provider": provider,
        "model": model_name,
        "input": Int8(input_tokens),
        "output": Int8(output_tokens),
        "cost": Decimal(price.cost_usd),
        "priced": price.priced,
        "month": month,
        "ids": _ids(counter_ids),
        "limits": _limits(next_caps) if next_caps is not None else [None] * len(counter_ids),
        "reserved": Decimal(reserved_usd),
        "next": Decimal(next_reserve_usd) if next_caps is not None else ZERO,
        "requests": Int8(1 if kind == EntryKind.MODEL_REQUEST else 0),
        "delegation": delegation,
        "billed_delegation": billed_delegation,
    }

    caps_to_warn = warn_caps if warn_caps is not None else next_caps

    def charge(rows: list[tuple]) -> Charge:
        refused = {row[0]: row[1] for row in rows if row[2]}
        committed = {row[0]: row[1] for row in rows if not row[2]}
        next_refused = _refusal(next_caps, refused) if next_caps is not None else None
        warnings = tuple(crossed_warnings(caps_to_warn, committed, Decimal(price.cost_usd)))
        return Charge(
            price.cost_usd, price.priced, input_tokens, output_tokens, next_refused, warnings
        )

    return Move(_SETTLE, params, charge)


def charge_record(**charge) -> Charge:
    """Book one charge now, on this thread's connection (see charge_move)."""
    return charge_move(**charge).run()


def ingestion_charge_record(
    *, organization, provider: str, model_name: str, input_tokens: int, output_tokens: int = 0
) -> Charge:
    """Book an ingestion job's spend against the organization's cap (it belongs to no run)."""
    month = month_of()
    counter = budget_counter_for(organization_id=organization.pk, agent_id=None, month=month)
    cap = Cap(
        BudgetScope.ORGANIZATION,
        organization.monthly_budget_usd,
        counter.pk,
        organization_warn_at(organization),
    )
    return charge_record(
        warn_caps=[cap],
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


def organization_warn_at(organization) -> tuple[Decimal, ...]:
    """The organization cap's warning fractions, from its settings (a bad stored value warns at
    nothing rather than failing a booking; the settings API refuses one)."""
    try:
        return tuple(budget_warn_at_checked(organization.budget_warn_at or []))
    except ValueError:
        logger.warning("organization %s has unreadable budget_warn_at", organization.pk)
        return ()


def budget_counters_reconcile(
    *, organization_id: int, busy_agent_ids: set[int], month: dt.date
) -> int:
    """Repair what a dead worker left: recompute committed spend from the ledger entries and drop
    reservations of scopes with no live run. Called by the stale-run reaper; returns rows fixed."""
    fixed = 0
    for counter in BudgetCounter.objects.filter(organization_id=organization_id, month=month):
        if counter.scope == BudgetScope.AGENT:
            committed = _entries_sum(ledger__agent_id=counter.agent_id, month=month)
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


def _price_details(price) -> dict:
    return {
        "provider": price.provider,
        "model": price.model_name,
        "input_usd_per_million": str(price.input_usd_per_million),
        "output_usd_per_million": str(price.output_usd_per_million),
        "applies_from": price.applies_from.isoformat(),
    }


@transaction.atomic
def model_price_save(*, actor, price, created: bool):
    """An operator's price for a model genai-prices does not know (the admin): saved and audited
    on the deployment's chain in one transaction. ``agenticos reprice`` applies it."""
    if created:
        price.created_by = actor
    price.save()
    record_audit(
        actor=actor,
        organization=None,
        action="spend.model_price.create" if created else "spend.model_price.change",
        subject=price,
        details=_price_details(price),
    )
    return price


@transaction.atomic
def model_price_delete(*, actor, price) -> None:
    record_audit(
        actor=actor,
        organization=None,
        action="spend.model_price.delete",
        subject=price,
        details=_price_details(price),
    )
    price.delete()
