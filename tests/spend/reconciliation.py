"""A month of activity for the reconciliation test and its benchmark, deterministic from a seed.

Every run goes through the real services — ``run_create`` and the runner (the budget guard, the
one ledger, delegation, the approval gate), triggers' ``trigger_fire`` / ``fire_drive``,
``ingestion_charge_record`` — at the real clock; the generator then *places* each finished tree
on its day of the month by moving all of its timestamps together (its rows, its ledger entries
with their ``month``, its turns), and finally lets the reaper's own reconcile recompute the
budget counters from the entries, so every figure the surfaces read is one the services wrote.

What a month holds, per organization: top-level runs on the offline model and on two providers
of the OpenAI-compatible server on 127.0.0.1 (one priced as gpt-4o-mini, one a model genai-prices
does not know), a tree of published delegates three deep with inline specialists, a delegation
tree crossing the window's start (the parent before it, its delegates inside — #620), a parked
run resumed after the window's start, cancelled, failed and budget-stopped runs, scheduled
(triggered) runs, knowledge ingestion, and a run crossing midnight on the previous month's last
day into this month.
"""

from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass, field
from decimal import Decimal

from django.db.models import F
from django.utils import timezone

from apps.approvals.models import ToolApproval
from apps.approvals.services import approval_decide
from apps.runs.models import Message, Run
from apps.runs.resume import run_resume
from apps.runs.services import run_cancel
from apps.spend.models import BudgetCounter, Ledger, LedgerEntry
from apps.spend.services import budget_counters_reconcile, ingestion_charge_record, month_of
from apps.triggers import services as triggers
from apps.triggers.choices import FireVia
from apps.vault.services import secret_create
from tests.runs.delegating import delegating, run_of, task_call
from tests.runs.factories import compatible_profile, published_agent

PRICED_MODEL = "gpt-4o-mini"
UNPRICED_MODEL = "acme-private-7b"
WRITER = {"name": "writer", "description": "Writes prose.", "instructions": "You write."}
ADD = '/call add_task {"content": "Email the customer"}'


@dataclass
class Cast:
    organization: object
    owner: object
    member: object
    agents: dict = field(default_factory=dict)


def cast_for(organization, owner, member, base_url: str) -> Cast:
    """The organization's agents: three top-level models, a three-deep tree, a tiny cap, a gate."""
    secret = secret_create(
        actor=owner, organization=organization, name="k", purpose="openai_compatible", value="sk-1"
    )
    priced = compatible_profile(
        organization, base_url=base_url, model_name=PRICED_MODEL, secret=secret, label="Priced"
    )
    unpriced = compatible_profile(
        organization, base_url=base_url, model_name=UNPRICED_MODEL, secret=secret, label="Custom"
    )
    broken = compatible_profile(
        organization, base_url=base_url, model_name="gpt-4o-mini-500", secret=secret, label="Broken"
    )
    cast = Cast(organization, owner, member)
    a = cast.agents
    a["helper"] = published_agent(organization, name="Helper", created_by=owner)
    a["analyst"] = published_agent(
        organization, name="Analyst", model_profile_id=priced.pk, created_by=owner
    )
    a["custom"] = published_agent(
        organization, name="Custom", model_profile_id=unpriced.pk, created_by=owner
    )
    # The tree follows the offline model's /call scripts down to its leaf, which answers on the
    # model genai-prices does not know: an unpriced request three levels down.
    a["leaf"] = published_agent(
        organization, name="Leaf", model_profile_id=unpriced.pk, capabilities=[{"id": "planning"}]
    )
    a["third"] = delegating(organization, a["leaf"], name="Third")
    a["second"] = delegating(
        organization, a["third"], name="Second", config={"max_depth": 2, "inline": [WRITER]}
    )
    a["root"] = delegating(
        organization, a["second"], name="Orchestrator", config={"max_depth": 3, "inline": [WRITER]}
    )
    a["capped"] = published_agent(organization, name="Capped", budget={"monthly_usd": "0.01"})
    a["broken"] = published_agent(
        organization, name="Broken", model_profile_id=broken.pk, capabilities=[{"id": "planning"}]
    )
    a["gated"] = published_agent(
        organization,
        name="Mailer",
        capabilities=[{"id": "planning", "tool_approval": {"add_task": "required"}}],
    )
    a["scheduled"] = published_agent(organization, name="Reporter", created_by=owner)
    return cast


TREE_SCRIPT = "\n".join(
    [
        task_call(
            task_call(task_call("/call read_plan {}", "leaf"), "third")
            + "\n"
            + task_call("polish", "writer"),
            "second",
        ),
        task_call("draft it", "writer"),
    ]
)


def _tree(run: Run) -> list[int]:
    ids = [run.pk]
    frontier = [run.pk]
    while frontier:
        frontier = list(Run.objects.filter(parent_run_id__in=frontier).values_list("pk", flat=True))
        ids.extend(frontier)
    return ids


def place(run: Run, at: dt.datetime) -> None:
    """Move a finished tree so that its top-level row starts at ``at``: every timestamp of it by
    the same amount, and each ledger entry's month to the month it now falls in."""
    run = Run.objects.get(pk=run.pk)
    origin = run.started_at or run.created_at
    shift(run, at - origin)


def shift(run: Run, delta: dt.timedelta, *, entries_after: dt.datetime | None = None) -> None:
    """Move a tree's timestamps by ``delta`` (only its entries booked after ``entries_after``,
    and nothing else, when given — a resumed segment)."""
    ids = _tree(run)
    ledger = Ledger.objects.filter(run_id=run.pk).first()
    entries = LedgerEntry.objects.filter(ledger=ledger) if ledger else LedgerEntry.objects.none()
    if entries_after is not None:
        entries = entries.filter(created_at__gt=entries_after)
    for entry in entries:
        moved = entry.created_at + delta
        LedgerEntry.objects.filter(pk=entry.pk).update(created_at=moved, month=month_of(moved))
    if entries_after is not None:
        return
    rows = Run.objects.filter(pk__in=ids)
    rows.filter(started_at__isnull=False).update(started_at=F("started_at") + delta)
    rows.filter(ended_at__isnull=False).update(ended_at=F("ended_at") + delta)
    rows.update(created_at=F("created_at") + delta)
    Message.objects.filter(run_id__in=ids).update(created_at=F("created_at") + delta)
    ToolApproval.objects.filter(run_id__in=ids).update(created_at=F("created_at") + delta)


def _moment(rng: random.Random, day: dt.date, now: dt.datetime) -> dt.datetime:
    start = dt.datetime.combine(day, dt.time.min, tzinfo=dt.UTC)
    latest = min(start + dt.timedelta(days=1), now - dt.timedelta(minutes=5))
    span = max(int((latest - start).total_seconds()) - 60, 1)
    return start + dt.timedelta(seconds=rng.randrange(span))


def build_month(cast: Cast, *, seed: int, runs: int = 24, now: dt.datetime | None = None) -> dict:
    """The month: ``runs`` ordinary top-level runs spread over the previous month and this one
    up to now, plus one of each special shape. Returns the special runs by name."""
    rng = random.Random(seed)
    now = now or timezone.now()
    this_month = month_of(now)
    previous_month = (this_month - dt.timedelta(days=1)).replace(day=1)
    days = [
        previous_month + dt.timedelta(days=n) for n in range((this_month - previous_month).days)
    ]
    days += [this_month + dt.timedelta(days=n) for n in range((now.date() - this_month).days + 1)]
    org, member, owner, a = cast.organization, cast.member, cast.owner, cast.agents
    specials: dict[str, Run] = {}

    ordinary = [
        ("helper", lambda n: f"hello number {n}"),
        ("analyst", lambda n: f"question number {n}"),
        ("custom", lambda n: f"a private question {n}"),
        ("root", lambda n: TREE_SCRIPT),
    ]
    for n in range(runs):
        key, script = ordinary[n % len(ordinary)] if n < len(ordinary) else rng.choice(ordinary)
        run = run_of(
            rng.choice([member, owner]), org, a[key], script(n), surface=rng.choice(["api", "chat"])
        )
        place(run, _moment(rng, rng.choice(days), now))

    # Today, so the one-day window has money in it.
    place(run_of(member, org, a["helper"], "hello today"), now - dt.timedelta(minutes=2))

    # A budget-stopped run (a tiny cap binds after its first request), a failed one (the provider
    # answers 500 after a tool call, so one request is billed) and a cancelled parked one.
    # About 4,000 input tokens ($0.012 offline): the first request is admitted under the $0.01 cap,
    # the second refused before it is sent.
    specials["budget"] = run_of(member, org, a["capped"], "/steps 4\n" + "context " * 2000)
    specials["failed"] = run_of(member, org, a["broken"], "use the plan")
    parked = run_of(member, org, a["gated"], ADD)
    specials["cancelled"] = run_cancel(actor=owner, run=parked)
    for name in ("budget", "failed", "cancelled"):
        place(specials[name], _moment(rng, rng.choice(days), now))

    # Scheduled runs: a trigger fired through beat's path.
    trigger, _ = triggers.trigger_create(
        actor=owner,
        organization=org,
        agent=a["scheduled"],
        kind="schedule",
        name="Daily report",
        prompt="Write the daily report",
        schedule={"cron": "0 9 * * *", "timezone": "UTC"},
    )
    for day in rng.sample(days, 3):
        fire = triggers.trigger_fire(trigger_id=trigger.pk, via=FireVia.SCHEDULE)
        triggers.fire_drive(fire.pk)
        place(Run.objects.get(pk=fire.run_id), dt.datetime.combine(day, dt.time(9), tzinfo=dt.UTC))

    # Knowledge ingestion: booked to the organization, no run.
    for day in rng.sample(days, 3):
        ingestion_charge_record(
            organization=org,
            provider="openai",
            model_name="text-embedding-3-small",
            input_tokens=rng.randrange(20_000, 200_000),
        )
        entry = LedgerEntry.objects.filter(organization=org, kind="ingestion").latest("pk")
        at = _moment(rng, day, now)
        LedgerEntry.objects.filter(pk=entry.pk).update(created_at=at, month=month_of(at))

    # Parked before this month's start, resumed after it: its row starts in the previous month,
    # its continuation's entries are booked in this one.
    parked = run_of(member, org, a["gated"], ADD)
    place(
        parked, dt.datetime.combine(this_month, dt.time.min, tzinfo=dt.UTC) - dt.timedelta(hours=5)
    )
    resumed_from = timezone.now()
    approval_decide(actor=owner, approval=ToolApproval.objects.get(run=parked), decision="approve")
    run_resume(run_id=parked.pk)
    parked.refresh_from_db()
    shift(parked, (now - dt.timedelta(minutes=1)) - timezone.now(), entries_after=resumed_from)
    specials["resumed"] = parked

    # A delegation tree crossing the seven-day window's start (#620): the parent before it, its
    # delegated rows (their own, unpriced ones among them) inside it.
    edge = dt.datetime.combine(now.date() - dt.timedelta(days=6), dt.time.min, tzinfo=dt.UTC)
    crossing = run_of(member, org, a["root"], TREE_SCRIPT)
    place(crossing, edge - dt.timedelta(hours=2))
    children = Run.objects.filter(pk__in=_tree(crossing)[1:])
    children.update(
        started_at=edge + dt.timedelta(hours=1), created_at=edge + dt.timedelta(hours=1)
    )
    specials["crossing"] = crossing

    # A run crossing midnight on the previous month's last day: two requests before midnight,
    # the rest after it, booked in this month.
    midnight = dt.datetime.combine(this_month, dt.time.min, tzinfo=dt.UTC)
    late = run_of(member, org, a["helper"], "/steps 4")
    place(late, midnight - dt.timedelta(seconds=30))
    for index, entry in enumerate(
        LedgerEntry.objects.filter(ledger__run=late).order_by("created_at", "pk")
    ):
        at = midnight + dt.timedelta(seconds=-20 + 10 * index)
        LedgerEntry.objects.filter(pk=entry.pk).update(created_at=at, month=month_of(at))
    Run.objects.filter(pk=late.pk).update(ended_at=at)
    specials["midnight"] = late

    # The counters are a cache of the ledger: recomputed from the entries by the reaper's own
    # reconcile, for every month the activity touched.
    for month in {previous_month, this_month}:
        for agent_id in [None, *(agent.pk for agent in a.values())]:
            from apps.spend.services import budget_counter_for

            budget_counter_for(organization_id=org.pk, agent_id=agent_id, month=month)
        budget_counters_reconcile(organization_id=org.pk, busy_agent_ids=set(), month=month)
    return specials


def ledger_of_window(organization, since: dt.datetime, until: dt.datetime) -> dict:
    """The ledger's own answer for a window: every entry of the trees whose top-level row
    started in it (a tree is one bill), and the ingestion booked in it."""
    top = Run.objects.filter(
        organization=organization,
        parent_run__isnull=True,
        started_at__gte=since,
        started_at__lte=until,
    )
    entries = LedgerEntry.objects.filter(ledger__run__in=top)
    ingestion = LedgerEntry.objects.filter(
        organization=organization, kind="ingestion", created_at__gte=since, created_at__lte=until
    )
    by_provider: dict[str, Decimal] = {}
    for provider, cost in entries.values_list("provider", "cost_usd"):
        by_provider[provider] = by_provider.get(provider, Decimal("0")) + cost
    return {
        "model_usd": sum((e for e in entries.values_list("cost_usd", flat=True)), Decimal("0")),
        "ingestion_usd": sum(
            (e for e in ingestion.values_list("cost_usd", flat=True)), Decimal("0")
        ),
        "by_provider": by_provider,
        "unpriced": entries.filter(priced=False).exists(),
        "unpriced_trees": set(
            entries.filter(priced=False).values_list("ledger__run_id", flat=True)
        ),
    }


__all__ = ["BudgetCounter", "Cast", "build_month", "cast_for", "ledger_of_window", "place"]
