"""Every read of spend a person can reach: the spend screen, GET /spend, GET /stats/usage, the
spend export and the dashboard's cap card. Sums are computed in SQL; Python only merges the
groups and fills the days nothing ran.

Seed 003 ("Cada consulta tiene que decir a cuál de las dos responde") asks every figure which of
two questions it answers, and each function here says it:

- **What the organization owes** (window ``cost_usd`` per agent, the totals, by user, the daily
  series, GET /stats/usage): top-level runs only — a parent's row already holds the tokens of its
  delegations, so counting both bills one request twice — plus ingestion, which belongs to no run.
- **What this agent cost** (``month_to_date_usd`` against the agent's ``monthly_cap_usd``): the
  agent's own calendar month, delegated rows included. It is read from the ledger entries the
  budget guard measures the cap against, so the screen and the guard cannot disagree about how
  close a cap is. It does not add up to the organization's month and is not drawn as if it did.
- **Which provider / which key was paid** (by provider, by key): each run's *own* spend — its cost
  minus that of its direct delegations — over every row, delegated ones included. That is both
  the right attribution and the right total (an OpenAI orchestrator delegating $0.40 to an
  Anthropic agent reads openai $0.60 + anthropic $0.40, not $1.00 + $0.40).

A floor is counted, not hidden: ``partial_run_count`` says how many runs could not be fully
priced (an unknown model is booked at 0), so "3 of 40 runs could not be priced" can be acted on.

Scope: every function takes a ``SpendScope``. The organization's question needs ``runs:view``;
anyone else is floored to their own runs (WHERE user_id = them) and an ingestion half of zero —
a document is indexed by a worker and the ledger records no person for it, so charging it to
someone's window would invent spend (seed 003).
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.apps import apps
from django.db.models import (
    Count,
    F,
    Q,
    QuerySet,
    Sum,
    Value,
)
from django.db.models.fields.json import KeyTextTransform, KeyTransform
from django.db.models.functions import Coalesce, Greatest
from django.utils import timezone

from agenticos.money import DEFAULT_BUDGET_WARN_AT, budget_warn_at_checked, usd_field
from apps.orgs.models import Organization
from apps.orgs.permissions import RUNS_VIEW, has_org_permission

from . import rollup
from .filters import SpendWindow
from .models import (
    BudgetCounter,
    BudgetScope,
    EntryKind,
    LedgerEntry,
    SpendDayCrossing,
    SpendDayEntries,
    SpendDayRuns,
)
from .services import month_of

ZERO = Decimal("0")
MONEY_FIELD = usd_field()

# What a run has spent. A finished run's row holds what its ledger booked (the runner's finally
# block copies it); a run still in flight has 0 on its row while its ledger grows request by
# request, so the larger of the two keeps a live run's money on the screen before it ends.
RUN_SPENT = Greatest(
    F("cost_usd"), Coalesce(F("ledger__cost_usd"), Value(ZERO), output_field=MONEY_FIELD)
)
# A floor: the row says so (the reaper marks it, the runner copies it) or its ledger already does.
RUN_IS_PARTIAL = Q(cost_is_partial=True) | Q(ledger__cost_is_partial=True)
# A queued run has no started_at yet: it is windowed by when it was asked for, as the run history
# does, so the spend screen and GET /runs?started_from=… count the same rows.
RUN_STARTED = Coalesce("started_at", "created_at")


def _run_model():
    # runs imports spend (the runner adds the guard); spend reads runs only here, by name, so
    # the import graph keeps pointing one way (STYLE.md, "Which way the imports point").
    return apps.get_model("runs", "Run")


@dataclass(frozen=True)
class SpendScope:
    """Whose spend a caller may read: the organization's, or (no runs:view) only their own."""

    organization: Organization
    own_user_id: int | None = None

    @classmethod
    def for_reader(cls, user, organization, *, own: bool = False) -> SpendScope:
        if own or not has_org_permission(user, organization, RUNS_VIEW):
            return cls(organization=organization, own_user_id=user.pk)
        return cls(organization=organization)

    @property
    def is_own(self) -> bool:
        return self.own_user_id is not None


def _money(value) -> Decimal:
    return ZERO if value is None else Decimal(value)


# --- the building blocks ----------------------------------------------------------------------


def scoped_runs(scope: SpendScope) -> QuerySet:
    """Every run of the scope, delegated ones included, with ``started`` and ``spent``."""
    runs = _run_model().objects.filter(organization=scope.organization)
    if scope.is_own:
        runs = runs.filter(user_id=scope.own_user_id)
    return runs.annotate(started=RUN_STARTED, spent=RUN_SPENT)


def window_runs(scope: SpendScope, window: SpendWindow, *, top_level: bool = True) -> QuerySet:
    runs = scoped_runs(scope).filter(started__gte=window.since, started__lte=window.until)
    return runs.filter(parent_run__isnull=True) if top_level else runs


def _ingestion_entries(scope: SpendScope) -> QuerySet:
    if scope.is_own:
        return LedgerEntry.objects.none()
    return LedgerEntry.objects.filter(organization=scope.organization, kind=EntryKind.INGESTION)


def _window_ingestion(scope: SpendScope, window: SpendWindow) -> QuerySet:
    return _ingestion_entries(scope).filter(
        created_at__gte=window.since, created_at__lte=window.until
    )


WINDOW_FIGURES = {
    "cost_usd": Coalesce(Sum("spent"), Value(ZERO), output_field=MONEY_FIELD),
    "run_count": Count("pk"),
    "partial_run_count": Count("pk", filter=RUN_IS_PARTIAL),
}


def spend_rows_by_agent(runs: QuerySet) -> QuerySet:
    """Top-level window runs grouped per agent, with the window figures only — the queryset the
    export windows and counts, and the per-agent half of GET /spend."""
    return (
        runs.order_by().values("agent_id", agent_name=F("agent__name")).annotate(**WINDOW_FIGURES)
    )


def crossing_floor_trees(
    scope: SpendScope, window: SpendWindow, *, slices: rollup.Slices | None = None
) -> dict[int, int]:
    """Trees that cross the window's start with an unpriced request inside it, per agent (#620).

    A tree whose top-level row started before the window while a delegated row of it started
    inside: the top-level row, which would carry the floor mark, is outside every aggregate of
    the page, while the delegate's own spend is inside By provider and By key. So the tree is
    counted by the delegate — on the agent that ran it, once per tree however many delegations
    cross the edge, and only when the delegate's own requests (its row's ``cost_is_partial``: its
    requests and its inline specialists') were unpriced. A priced delegation under an unpriced
    parent outside the window raises nothing: the window's money is exact.
    """
    slices = slices or window_slices(scope, window)
    # The unpriced delegated rows of the window with their root (at most three hops up), kept
    # when the root started before the window: the cached days hold the ones rooted on an
    # earlier day, the live edges are read with the window's own start.
    cached = SpendDayCrossing.objects.filter(
        slices.cached(),
        organization_id=slices.organization_id,
        root_started_at__lt=slices.since,
    )
    if scope.is_own:
        cached = cached.filter(user_id=scope.own_user_id)
    rows = [
        *cached.values("run_id", "root_id", "started_at", "agent_id", "user_id"),
        *slices.live_rows(
            "crossing", rollup.CROSSING_SQL.format(before="%(since)s"), since=slices.since
        ),
    ]
    if scope.is_own:
        rows = [row for row in rows if row["user_id"] == scope.own_user_id]
    first_of_tree: dict[int, int] = {}
    for row in sorted(rows, key=lambda row: (row["started_at"], row["run_id"])):
        first_of_tree.setdefault(row["root_id"], row["agent_id"])
    per_agent: dict[int, int] = defaultdict(int)
    for agent_id in first_of_tree.values():
        per_agent[agent_id] += 1
    return dict(per_agent)


# --- reading the rollup -------------------------------------------------------------------------
# Every figure below is a sum of the per-day rollup over the window's days plus the same
# statement run live over the window's partial days (apps/spend/rollup.py); the two halves are
# merged per breakdown key here.


def window_slices(scope: SpendScope, window: SpendWindow) -> rollup.Slices:
    """The window cut into cached days and live edges: compute it once per page and pass it to
    each figure (every function computes it itself when not given)."""
    return rollup.slices_for(scope.organization.pk, window.since, window.until)


def month_slices(scope: SpendScope, *, now: dt.datetime | None = None) -> rollup.Slices:
    return rollup.month_slices(scope.organization.pk, month_of(now))


WINDOW_MEASURES = ("cost_usd", "run_count", "partial_run_count")


def _summed(cached, slices: rollup.Slices, dims: tuple[str, ...], measures) -> list[dict]:
    """The cached days' rows of ``cached`` summed per ``dims`` (one row without dims); none
    when the slices have no cached day."""
    if not slices.has_cached:
        return []
    sums = {measure: Sum(measure) for measure in measures}
    if dims:
        return list(cached.values(*dims).annotate(**sums))
    return [cached.aggregate(**sums)]


def run_groups(
    scope: SpendScope,
    slices: rollup.Slices,
    dims: tuple[str, ...],
    *,
    top_level: bool | None = None,
    measures: tuple[str, ...] = WINDOW_MEASURES,
) -> dict[tuple, dict]:
    """The window's runs (top-level ones, delegated ones, or both) summed per ``dims``."""
    cached = SpendDayRuns.objects.filter(
        slices.cached(), organization_id=slices.organization_id
    ).order_by()
    live = slices.live_rows("runs", rollup.RUNS_SQL)
    if scope.is_own:
        cached = cached.filter(user_id=scope.own_user_id)
        live = [row for row in live if row["user_id"] == scope.own_user_id]
    if top_level is not None:
        cached = cached.filter(top_level=top_level)
        live = [row for row in live if row["top_level"] == top_level]
    merged = rollup.merge([*_summed(cached, slices, dims, measures), *live], dims, measures)
    return {key: figures for key, figures in merged.items() if figures.get("run_count", 1)}


ENTRY_MEASURES = ("cost_usd", "unpriced_count")


def entry_groups(
    slices: rollup.Slices,
    dims: tuple[str, ...],
    *,
    own_user_id: int | None = None,
    **filters,
) -> dict[tuple, dict]:
    """The ledger entries booked on the slices' days (``filters``: kind, month, …) per ``dims``."""
    cached = SpendDayEntries.objects.filter(
        slices.cached(), organization_id=slices.organization_id, **filters
    ).order_by()
    live = slices.live_rows("entries", rollup.ENTRIES_SQL)
    if own_user_id is not None:
        cached = cached.filter(user_id=own_user_id)
        filters = {**filters, "user_id": own_user_id}
    if "agent_id__isnull" in filters:
        filters.pop("agent_id__isnull")
        cached = cached.filter(agent_id__isnull=False)
        live = [row for row in live if row["agent_id"] is not None]
    live = [row for row in live if all(row[name] == value for name, value in filters.items())]
    rows = _summed(cached, slices, dims, ENTRY_MEASURES)
    return rollup.merge([*rows, *live], dims, ENTRY_MEASURES)


def _ingestion_usd(scope: SpendScope, slices: rollup.Slices) -> Decimal:
    if scope.is_own:
        return ZERO
    figures = entry_groups(slices, (), kind=EntryKind.INGESTION).get((), {})
    return _money(figures.get("cost_usd"))


# --- GET /spend -------------------------------------------------------------------------------


def spend_totals(
    scope: SpendScope, window: SpendWindow, *, slices: rollup.Slices | None = None
) -> dict:
    """The window's bill: top-level runs plus ingestion, with each half beside the sum."""
    slices = slices or window_slices(scope, window)
    runs = run_groups(scope, slices, (), top_level=True).get((), dict.fromkeys(WINDOW_MEASURES, 0))
    ingestion = _ingestion_usd(scope, slices)
    model = _money(runs["cost_usd"])
    return {
        "cost_usd": model + ingestion,
        "model_usd": model,
        "ingestion_usd": ingestion,
        "run_count": runs["run_count"],
        # Trees crossing the window's start count by their unpriced delegate (#620), so this one
        # figure is the sum of By agent's and governs every breakdown of the page.
        "partial_run_count": runs["partial_run_count"]
        + sum(crossing_floor_trees(scope, window, slices=slices).values()),
    }


def month_to_date(
    scope: SpendScope, *, now: dt.datetime | None = None, months: rollup.Slices | None = None
) -> dict:
    """The organization's calendar month (UTC) against its cap: every ledger entry of the month —
    every run, each request once, and every ingestion — the very sum the guard's organization
    counter holds. A scope floored to one person reads their own runs' entries only."""
    month = month_of(now)
    months = months or month_slices(scope, now=now)
    figures = entry_groups(months, (), own_user_id=scope.own_user_id, month=month).get((), {})
    organization = scope.organization
    return {
        "month": month.strftime("%Y-%m"),
        "month_to_date_usd": _money(figures.get("cost_usd")),
        "month_to_date_is_partial": bool(figures.get("unpriced_count")),
        "monthly_cap_usd": None if scope.is_own else organization.monthly_budget_usd,
    }


def organization_month_figures(organization, reader) -> dict:
    """The organization's month to date for its own row (GET /orgs/{id}); spend is a runs:view
    read (seed 003), so a reader without it gets the row without the figure, not a refusal."""
    if not has_org_permission(reader, organization, RUNS_VIEW):
        return {}
    month = month_to_date(SpendScope(organization=organization))
    return {
        "month": month["month"],
        "month_to_date_usd": str(month["month_to_date_usd"]),
        "month_to_date_is_partial": month["month_to_date_is_partial"],
    }


def agent_months(scope: SpendScope, month: dt.date) -> dict[int, dict]:
    """Each agent's month against its own cap, keyed by agent id: ``total`` and ``unpriced``.

    The figure is the one the budget guard checks the cap against, read where the guard reads it:
    the agent's counter for the month (apps/spend/services.py), which holds every entry booked
    under a run the agent started — its delegates' requests included, whichever agent they billed
    (the delegation spends its parent's budget). Grouping entries by the agent each one billed
    would leave a delegating agent's card short of its refusal. A person floored to their own
    runs reads the same measure over their own runs' entries.
    """
    entries = LedgerEntry.objects.filter(
        organization=scope.organization, month=month, ledger__agent_id__isnull=False
    )
    if scope.own_user_id is not None:
        entries = entries.filter(ledger__run__user_id=scope.own_user_id)
        rows = (
            entries.order_by()
            .values("ledger__agent_id")
            .annotate(
                total=Coalesce(Sum("cost_usd"), Value(ZERO), output_field=MONEY_FIELD),
                unpriced=Count("pk", filter=Q(priced=False)),
            )
        )
        return {
            row["ledger__agent_id"]: {"total": row["total"], "unpriced": row["unpriced"]}
            for row in rows
        }
    unpriced = dict(
        entries.filter(priced=False)
        .order_by()
        .values("ledger__agent_id")
        .annotate(count=Count("pk"))
        .values_list("ledger__agent_id", "count")
    )
    counters = BudgetCounter.objects.filter(
        organization=scope.organization, scope=BudgetScope.AGENT, month=month
    ).values_list("agent_id", "committed_usd")
    months = {
        agent_id: {"total": committed, "unpriced": unpriced.get(agent_id, 0)}
        for agent_id, committed in counters
    }
    # An unpriced entry books 0: its agent's counter may not exist yet, but the floor is shown.
    for agent_id, count in unpriced.items():
        months.setdefault(agent_id, {"total": ZERO, "unpriced": count})
    return months


def spend_by_agent(
    scope: SpendScope,
    window: SpendWindow,
    *,
    now: dt.datetime | None = None,
    slices: rollup.Slices | None = None,
    months: rollup.Slices | None = None,
) -> list[dict]:
    """One row per agent, with ``agent_name``: the window's ``cost_usd``, ``run_count`` and
    ``partial_run_count`` (top-level runs, so the column sums to the total above it), and the
    agent's ``month_to_date_usd`` (its own month, delegated rows included: what its cap measures)
    against ``monthly_cap_usd`` of the *published* version — the number the runner applies.

    Rows: every agent that ran in the window (as a delegate too) or spent this month, and every
    active agent with a published cap (a cap at $0.00 of $5.00 is worth seeing). Most expensive first.
    """
    Agent = apps.get_model("agents", "Agent")
    slices = slices or window_slices(scope, window)
    months = months or month_slices(scope, now=now)
    window_rows = {
        key[0]: row for key, row in run_groups(scope, slices, ("agent_id",), top_level=True).items()
    }
    crossing = crossing_floor_trees(scope, window, slices=slices)
    month_rows: dict[int, Any] = agent_months(scope, month_of(now))
    # An agent that only ran as someone's delegate has a row too (its money is inside its
    # parents' rows, so its window cost reads 0, but its month and cap are still its own).
    delegates = {key[0] for key in run_groups(scope, slices, ("agent_id",), top_level=False)}
    agents = (
        Agent.objects.filter(organization=scope.organization)
        .annotate(
            cap=KeyTextTransform("monthly_usd", KeyTransform("budget", "current_version__spec"))
        )
        .filter(
            Q(pk__in=set(window_rows) | set(month_rows) | delegates)
            | Q(status="active", cap__isnull=False)
        )
        .only("pk", "name", "status")
    )
    rows = []
    for agent in agents:
        window_row = window_rows.get(agent.pk, {})
        month_row: dict = month_rows.get(agent.pk, {})
        rows.append(
            {
                "agent_id": agent.pk,
                "agent_name": agent.name,
                "cost_usd": _money(window_row.get("cost_usd")),
                "run_count": window_row.get("run_count", 0),
                "partial_run_count": window_row.get("partial_run_count", 0)
                + crossing.get(agent.pk, 0),
                "month_to_date_usd": _money(month_row.get("total")),
                "month_to_date_is_partial": bool(month_row.get("unpriced")),
                "monthly_cap_usd": None if agent.cap is None else Decimal(agent.cap),
            }
        )
    rows.sort(
        key=lambda row: (
            -row["cost_usd"],
            -row["month_to_date_usd"],
            row["agent_name"],
            row["agent_id"],
        )
    )
    return rows


def _warn_fractions(values) -> list[Decimal]:
    try:
        return budget_warn_at_checked(values if values is not None else DEFAULT_BUDGET_WARN_AT)
    except ValueError:
        return []


def caps_approaching(scope: SpendScope, *, month: dict, by_agent: list[dict]) -> list[dict]:
    """The dashboard's margin card: every cap whose month has reached one of its warning
    thresholds (the organization's from its settings, each agent's from its published spec's
    alerts.budget.warn_at), so a cap is seen approaching before ``budget_exceeded`` shows up in
    the run history. ``month`` and ``by_agent`` are month_to_date's and spend_by_agent's answers
    (the same figures the card prints). Closest to its cap first."""
    Agent = apps.get_model("agents", "Agent")
    found = []

    def consider(kind, name, agent_id, spent, cap, fractions, partial):
        if not cap or not fractions:
            return
        used = spent / cap
        crossed = [f for f in fractions if used >= f]
        if crossed:
            found.append(
                {
                    "kind": kind,
                    "name": name,
                    "agent_id": agent_id,
                    "spent_usd": spent,
                    "spent_is_partial": partial,
                    "cap_usd": cap,
                    "used_percent": int(used * 100),
                    "threshold_percent": int(crossed[-1] * 100),
                    "reached": used >= 1,
                }
            )

    if not scope.is_own:
        consider(
            "organization",
            scope.organization.name,
            None,
            month["month_to_date_usd"],
            month["monthly_cap_usd"],
            _warn_fractions(scope.organization.budget_warn_at),
            month["month_to_date_is_partial"],
        )
    capped = {row["agent_id"]: row for row in by_agent if row["monthly_cap_usd"]}
    warn_at = dict(
        Agent.objects.filter(organization=scope.organization, pk__in=capped).values_list(
            "pk",
            KeyTransform(
                "warn_at",
                KeyTransform("budget", KeyTransform("alerts", "current_version__spec")),
            ),
        )
    )
    for agent_id, row in capped.items():
        consider(
            "agent",
            row["agent_name"],
            agent_id,
            row["month_to_date_usd"],
            row["monthly_cap_usd"],
            _warn_fractions(warn_at.get(agent_id)),
            row["month_to_date_is_partial"],
        )
    return sorted(found, key=lambda item: (-item["spent_usd"] / item["cap_usd"], item["name"]))


OWN_MEASURES = ("own_usd", "run_count", "partial_run_count")


def spend_by_provider(
    scope: SpendScope, window: SpendWindow, *, slices: rollup.Slices | None = None
) -> list[dict]:
    """Each provider's own spend over the window's rows (delegated included), most first.
    ``partial_run_count`` counts the summed rows marked as a floor.

    Own spend (seed 003, "Las dos preguntas sobre el proveedor necesitan una tercera
    respuesta"): a delegated row's cost is already its own — its agent's requests and its inline
    specialists', never its published delegates' (they have rows of their own;
    docs/delegation.md) — while a top-level row's cost is its tree's whole ledger. So the root
    alone gives back its tree (rollup.RUNS_SQL's ``own_usd``); subtracting a grandchild from its
    parent's row as well would take it off twice (found by the reconciliation test)."""
    slices = slices or window_slices(scope, window)
    rows = run_groups(scope, slices, ("provider",), measures=OWN_MEASURES)
    result = [
        {
            # A run refused before its first request never chose a provider.
            "provider": provider or "none",
            "cost_usd": _money(row["own_usd"]),
            "run_count": row["run_count"],
            "partial_run_count": row["partial_run_count"],
        }
        for (provider,), row in rows.items()
    ]
    return sorted(result, key=lambda row: (-row["cost_usd"], row["provider"]))


def spend_by_key(
    scope: SpendScope, window: SpendWindow, *, slices: rollup.Slices | None = None
) -> list[dict]:
    """Each vault key's own spend — a key is what someone rotates when a bill looks wrong.

    A run records its provider and model but not the profile it used, so the key is read through
    the run's published version: the spec's ``model_profile_id`` (None: the organization's
    default profile) and that profile's ``secret``. Sums are per version; the few versions
    are then resolved to keys. A profile deleted since reads as an unknown key, and a profile
    with no secret (the offline model) as no key, rather than being folded into some other key.
    """
    ModelProfile = apps.get_model("agents", "ModelProfile")
    AgentVersion = apps.get_model("agents", "AgentVersion")
    Secret = apps.get_model("vault", "Secret")
    slices = slices or window_slices(scope, window)
    per_version = run_groups(scope, slices, ("agent_version_id",), measures=OWN_MEASURES)
    profile_of = dict(
        AgentVersion.objects.filter(pk__in=[key[0] for key in per_version]).values_list(
            "pk", KeyTextTransform("model_profile_id", "spec")
        )
    )
    default_profile = (
        ModelProfile.objects.filter(organization=scope.organization, is_default=True)
        .values_list("pk", flat=True)
        .first()
    )
    profile_ids = {int(profile) for profile in profile_of.values() if profile}
    if default_profile is not None:
        profile_ids.add(default_profile)
    secret_of = dict(
        ModelProfile.objects.filter(
            organization=scope.organization, pk__in=profile_ids
        ).values_list("pk", "secret_id")
    )
    # A bucket per secret id, "none" (a profile without a key) or "unknown" (a deleted profile).
    buckets: dict[int | str, dict] = defaultdict(
        lambda: {"cost_usd": ZERO, "run_count": 0, "partial_run_count": 0}
    )
    for (version_id,), row in per_version.items():
        profile = profile_of.get(version_id)
        profile_id = int(profile) if profile else default_profile
        key: int | str
        if profile_id is None or profile_id not in secret_of:
            key = "unknown"
        else:
            key = secret_of[profile_id] or "none"
        bucket = buckets[key]
        bucket["cost_usd"] += _money(row["own_usd"])
        bucket["run_count"] += row["run_count"]
        bucket["partial_run_count"] += row["partial_run_count"]
    secrets = {
        secret.pk: secret
        for secret in Secret.objects.filter(
            organization=scope.organization, pk__in=[key for key in buckets if isinstance(key, int)]
        ).only("pk", "name", "hint")
    }
    result = []
    for key, figures in buckets.items():
        secret = secrets.get(key) if isinstance(key, int) else None
        if secret is not None:
            label = f"{secret.name} (…{secret.hint})" if secret.hint else secret.name
        else:
            label = {
                "none": "No key (offline or keyless model)",
                "unknown": "Unknown (model profile deleted)",
            }.get(str(key), "Unknown key")
        result.append(
            {
                "secret_id": secret.pk if secret is not None else None,
                "key": label,
                **figures,
            }
        )
    return sorted(result, key=lambda row: (-row["cost_usd"], row["key"]))


def spend_by_user(
    scope: SpendScope, window: SpendWindow, *, slices: rollup.Slices | None = None
) -> list[dict]:
    """Who spent it: top-level runs only (a delegation's cost lands once, inside the run that
    started it), the most active first. Naming people is the runs:view decision (seed 003)."""
    User = apps.get_model("orgs", "User")
    slices = slices or window_slices(scope, window)
    rows = run_groups(scope, slices, ("user_id",), top_level=True)
    emails = dict(
        User.objects.filter(pk__in=[key[0] for key in rows if key[0] is not None]).values_list(
            "pk", "email"
        )
    )
    result = [
        {
            "user_id": user_id,
            # A run whose account was deleted keeps its money; it has no one to name.
            "email": emails.get(user_id, "") if user_id is not None else "",
            "cost_usd": _money(row["cost_usd"]),
            "run_count": row["run_count"],
            "partial_run_count": row["partial_run_count"],
        }
        for (user_id,), row in rows.items()
    ]
    return sorted(
        result,
        key=lambda row: (
            -row["run_count"],
            -row["cost_usd"],
            row["user_id"] is None,
            row["user_id"] or 0,
        ),
    )


DAILY_MEASURES = (*WINDOW_MEASURES, "input_tokens", "output_tokens")


def daily_series(
    scope: SpendScope, window: SpendWindow, *, slices: rollup.Slices | None = None
) -> list[dict]:
    """One point per UTC day of the window, days nothing ran included as zeros: top-level runs
    (count, tokens, model cost, floors) plus that day's ingestion — the same arithmetic as the
    window's total, so the bars add up to the figure printed beside them."""
    slices = slices or window_slices(scope, window)
    by_day = {
        key[0]: row
        for key, row in run_groups(
            scope, slices, ("day",), top_level=True, measures=DAILY_MEASURES
        ).items()
    }
    ingestion_by_day = (
        {}
        if scope.is_own
        else {
            key[0]: _money(row["cost_usd"])
            for key, row in entry_groups(slices, ("day",), kind=EntryKind.INGESTION).items()
        }
    )
    series = []
    for day in window.days():
        row = by_day.get(day, {})
        model = _money(row.get("cost_usd"))
        ingested = ingestion_by_day.get(day, ZERO)
        input_tokens, output_tokens = row.get("input_tokens", 0), row.get("output_tokens", 0)
        series.append(
            {
                "date": day,
                "runs": row.get("run_count", 0),
                "input_tokens": input_tokens,
                "output_tokens": output_tokens,
                "tokens": input_tokens + output_tokens,
                "cost_usd": model + ingested,
                "model_usd": model,
                "ingestion_usd": ingested,
                "partial_run_count": row.get("partial_run_count", 0),
            }
        )
    return series


def spend_overview(
    scope: SpendScope, window: SpendWindow, *, now: dt.datetime | None = None
) -> dict:
    """Everything GET /spend answers and the Spend page draws, over one resolved window."""
    now = now or timezone.now()
    slices, months = window_slices(scope, window), month_slices(scope, now=now)
    return {
        "window": window,
        "total": spend_totals(scope, window, slices=slices),
        "organization": month_to_date(scope, now=now, months=months),
        "by_agent": spend_by_agent(scope, window, now=now, slices=slices, months=months),
        "by_provider": spend_by_provider(scope, window, slices=slices),
        "by_key": spend_by_key(scope, window, slices=slices),
        "by_user": spend_by_user(scope, window, slices=slices),
        "daily": daily_series(scope, window, slices=slices),
    }


def usage_stats(
    scope: SpendScope, window: SpendWindow, *, slices: rollup.Slices | None = None
) -> dict:
    """GET /stats/usage: runs, tokens and cost per day over the window, and their totals. The
    cost block is runs plus ingestion — the arithmetic the monthly cap is measured with — with
    model_usd and ingestion_usd beside it so a reader sees where the money went."""
    slices = slices or window_slices(scope, window)
    series = daily_series(scope, window, slices=slices)
    totals = spend_totals(scope, window, slices=slices)
    input_tokens = sum(point["input_tokens"] for point in series)
    output_tokens = sum(point["output_tokens"] for point in series)
    return {
        "window": window,
        "total_runs": totals["run_count"],
        "tokens": {
            "input": input_tokens,
            "output": output_tokens,
            "total": input_tokens + output_tokens,
        },
        "cost": totals,
        "daily": series,
    }
