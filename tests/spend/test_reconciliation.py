"""Every dollar reconciles to the cent: a month for two organizations built through the real
services (tests/spend/reconciliation.py), read back through every surface that draws money, for
a day, seven days, the calendar month, the previous one and a range crossing the month."""

from __future__ import annotations

import csv
import datetime as dt
import io
from decimal import Decimal

import pytest
from django.test import Client
from django.utils import timezone

from apps.agents.models import Agent
from apps.runs.models import Run
from apps.spend import rollup
from apps.spend.aggregates import SpendScope, spend_overview, usage_stats, window_slices
from apps.spend.charts import usd
from apps.spend.filters import SpendWindow
from apps.spend.models import LedgerEntry
from apps.spend.services import month_of
from apps.spend.usage_cards import usage_cards
from tests.factories import member_of
from tests.runs.fake_openai import FakeOpenAI
from tests.waiting import wait_until

from .reconciliation import build_month, cast_for, ledger_of_window

D = Decimal
CENT = D("0.01")


def _cents(value) -> Decimal:
    return D(str(value)).quantize(D("0.00000001"))


def _csv(response) -> list[dict]:
    assert response.status_code == 200, response.content[:300]
    body = b"".join(response.streaming_content) if response.streaming else response.content
    return list(csv.DictReader(io.StringIO(body.decode())))


@pytest.fixture
def month(org, owner, member, other_org, outsider, allow_local_model_requests):
    with FakeOpenAI() as server:
        acme = cast_for(org, owner, member, server.base_url)
        globex_member = member_of(other_org, "member", "member@globex.test")
        globex = cast_for(other_org, outsider, globex_member, server.base_url)
        specials = {
            "acme": build_month(acme, seed=24, runs=16),
            "globex": build_month(globex, seed=620, runs=10),
        }
    return {"acme": acme, "globex": globex, "specials": specials}


def _every_figure(scope, window, now) -> tuple:
    return (
        spend_overview(scope, window, now=now),
        usage_stats(scope, window),
        usage_cards(scope, window, group_by="version"),
    )


def _windows(now: dt.datetime) -> dict[str, tuple[dt.datetime, dt.datetime]]:
    today = dt.datetime.combine(now.date(), dt.time.min, tzinfo=dt.UTC)
    this_month = dt.datetime.combine(month_of(now), dt.time.min, tzinfo=dt.UTC)
    previous = (this_month - dt.timedelta(days=1)).replace(day=1)
    return {
        "a day": (today, now),
        "seven days": (today - dt.timedelta(days=6), now),
        "the calendar month": (this_month, now),
        "the previous month": (previous, this_month - dt.timedelta(microseconds=1)),
        "a range crossing the month": (this_month - dt.timedelta(days=5), now),
        # Edges inside a day: the rollup reads those parts of the day live (apps/spend/rollup.py).
        "a range from and to a time of day": (
            today - dt.timedelta(days=9, hours=-7, minutes=-13),
            today - dt.timedelta(days=3, hours=5, minutes=31),
        ),
    }


@pytest.mark.django_db(transaction=True)
def test_every_surface_reconciles_to_the_cent_for_every_window(month, client_for, owner, outsider):
    now = timezone.now()
    specials = month["specials"]["acme"]
    # The month holds every shape the generator promises.
    assert specials["budget"].status == "budget_exceeded"
    # Failed after one billed request, on a model genai-prices does not know: booked as a floor.
    assert specials["failed"].status == "failed" and specials["failed"].request_count >= 1
    assert specials["failed"].cost_is_partial
    assert specials["cancelled"].status == "cancelled"
    assert specials["resumed"].status == "completed"
    assert (
        Run.objects.filter(surface="schedule", organization=month["acme"].organization).count() == 3
    )
    assert Run.objects.filter(parent_run__parent_run__parent_run__isnull=False).exists()  # 3 deep

    for name, cast, reader in (
        ("acme", month["acme"], owner),
        ("globex", month["globex"], outsider),
    ):
        organization = cast.organization
        api = client_for(reader, organization)
        console = Client()
        console.force_login(reader)

        for label, (since, until) in _windows(now).items():
            where = f"{name}, {label}"
            window = {"from": since.isoformat(), "to": until.isoformat()}
            spend = api.get("/api/v1/spend/", window).json()
            usage = api.get("/api/v1/stats/usage/", window).json()
            export = _csv(api.get("/api/v1/spend/export/", window))
            runs = _csv(
                api.get(
                    "/api/v1/runs/export/",
                    {"started_from": since.isoformat(), "started_to": until.isoformat()},
                )
            )
            ledger = ledger_of_window(organization, since, until)
            # The per-day rollup the API answered from agrees with the same window read live.
            scope, spend_window = SpendScope(organization=organization), SpendWindow(since, until)
            cached = _every_figure(scope, spend_window, now)
            with rollup.live_only():
                assert _every_figure(scope, spend_window, now) == cached, where
            if label == "seven days":
                assert window_slices(scope, spend_window).days, where  # served from the rollup

            model = _cents(spend["total"]["model_usd"])
            ingestion = _cents(spend["total"]["ingestion_usd"])
            total = _cents(spend["total"]["cost_usd"])
            # The ledger's own answer: the entries of the trees started in the window, and the
            # ingestion booked in it.
            assert model == ledger["model_usd"], where
            assert ingestion == ledger["ingestion_usd"], where
            assert total == model + ingestion, where
            # Every breakdown sums to the same bill.
            assert sum(_cents(r["cost_usd"]) for r in spend["by_agent"]) == model, where
            # By provider and by key window every row by its own start (each row's own spend):
            # a tree crossing an edge of the window puts its delegates' own spend on the other
            # side of its top-level row's (seed 003, #620). The difference is exactly that.
            edge = _edge_delegations(organization, since, until)
            assert sum(_cents(r["cost_usd"]) for r in spend["by_provider"]) == model + edge, where
            assert sum(_cents(r["cost_usd"]) for r in spend["by_key"]) == model + edge, where
            assert sum(_cents(r["cost_usd"]) for r in spend["by_user"]) == model, where
            assert sum(_cents(p["cost_usd"]) for p in spend["daily"]) == total, where
            assert _cents(usage["cost"]["cost_usd"]) == total, where
            assert _cents(usage["cost"]["model_usd"]) == model, where
            assert sum(_cents(r["cost_usd"]) for r in export) == model, where
            assert sum(_cents(r["cost_usd"]) for r in runs) + ingestion == total, where
            # By provider is each provider's own money, exactly what the ledger booked with it.
            providers = {r["provider"]: _cents(r["cost_usd"]) for r in spend["by_provider"]}
            if not edge:
                assert {p: c for p, c in providers.items() if c} == {
                    p: c for p, c in ledger["by_provider"].items() if c
                }, where

            # Floor marks: on every surface iff an unpriced request is inside the window.
            crossing = _crossing_floor(organization, since)
            floor = bool(ledger["unpriced_trees"]) or bool(crossing)
            assert (spend["total"]["partial_run_count"] > 0) is floor, where
            assert (usage["cost"]["partial_run_count"] > 0) is floor, where
            assert spend["total"]["partial_run_count"] == len(ledger["unpriced_trees"]) + len(
                crossing
            ), where
            assert (
                sum(r["partial_run_count"] for r in spend["by_agent"])
                == spend["total"]["partial_run_count"]
            ), where
            assert {int(r["id"]) for r in runs if r["cost_is_partial"] == "true"} == ledger[
                "unpriced_trees"
            ], where
            assert sum(int(r["partial_run_count"]) for r in export) == len(
                ledger["unpriced_trees"]
            ), where
            # The unpriced model's provider row carries its floor.
            if ledger["unpriced_trees"]:
                assert _row(spend["by_provider"], "openai_compatible")["partial_run_count"], where

        # The month to date: the organization's row, the Spend page's, the dashboard's — and the
        # guard's counter — are the ledger's entries of the month (the cap's arithmetic).
        this_month = month_of(now)
        entries = LedgerEntry.objects.filter(organization=organization, month=this_month)
        month_total = sum((e.cost_usd for e in entries), D("0"))
        unpriced = entries.filter(priced=False).exists()
        row = api.get(f"/api/v1/orgs/{organization.pk}/").json()
        assert _cents(row["month_to_date_usd"]) == month_total, name
        assert row["month_to_date_is_partial"] is unpriced, name
        page = api.get("/api/v1/spend/", {"days": "30"}).json()
        assert _cents(page["organization"]["month_to_date_usd"]) == month_total, name
        html = console.get("/").content.decode()
        shown = usd(month_total)
        assert (f"≥ {shown}" if unpriced else shown) in html, name
        # The calendar month's window and the month to date answer different questions only by
        # the runs that crossed midnight into this month: their rows started last month, their
        # later requests were booked (and capped) in this one.
        since, until = _windows(now)["the calendar month"]
        window_total = _cents(
            api.get("/api/v1/spend/", {"from": since.isoformat()}).json()["total"]["cost_usd"]
        )
        straddling = sum(
            (e.cost_usd for e in entries.filter(ledger__run__started_at__lt=since)),
            D("0"),
        )
        assert straddling > 0, name  # the run crossing midnight, the parked run resumed
        assert month_total == window_total + straddling, name

        # Each agent's month: what its cap is checked against — every entry booked under the
        # runs it started, its delegates' included (the guard's counter, apps/spend/services.py).
        for agent_row in page["by_agent"]:
            agent = Agent.objects.get(pk=agent_row["agent_id"])
            own = entries.filter(ledger__agent=agent)
            assert _cents(agent_row["month_to_date_usd"]) == sum(
                (e.cost_usd for e in own), D("0")
            ), agent.name
            assert agent_row["month_to_date_is_partial"] is own.filter(priced=False).exists()


def _row(rows, provider):
    (row,) = [row for row in rows if row["provider"] == provider]
    return row


def _root(run: Run) -> Run:
    while run.parent_run_id is not None:
        run = Run.objects.get(pk=run.parent_run_id)
    return run


def _edge_delegations(organization, since, until) -> Decimal:
    """The own spend of delegated rows on the other side of a window's edge from their tree's
    top-level row: inside with the root outside (+), outside with the root inside (−). A
    delegated row's cost is its own spend."""
    total = D("0")
    for row in Run.objects.filter(organization=organization, parent_run__isnull=False):
        inside = since <= row.started_at <= until
        root_inside = since <= _root(row).started_at <= until
        if inside and not root_inside:
            total += row.cost_usd
        elif root_inside and not inside:
            total -= row.cost_usd
    return total


def _crossing_floor(organization, since) -> set[int]:
    """Trees whose root started before the window while an unpriced delegated row of theirs
    started inside it (#620)."""
    roots = set()
    for child in Run.objects.filter(
        organization=organization,
        parent_run__isnull=False,
        cost_is_partial=True,
        started_at__gte=since,
    ):
        root = child
        while root.parent_run_id is not None:
            root = Run.objects.get(pk=root.parent_run_id)
        if root.started_at < since:
            roots.add(root.pk)
    return roots


# --- what settles after an answer, what parks, what a dead worker leaves (issue 31) ------------


def _every_page(api, path: str, params: dict) -> list[dict]:
    rows, offset = [], 0
    while True:
        page = api.get(path, {**params, "limit": 100, "offset": offset}).json()
        batch = page["results"] if isinstance(page, dict) else page
        rows.extend(batch)
        if not isinstance(page, dict) or not page.get("next"):
            return rows
        offset += len(batch)


@pytest.mark.django_db(transaction=True)
def test_late_delegations_parks_and_a_dead_worker_reconcile_to_the_cent(
    org, owner, member, client_for, allow_local_model_requests
):
    from apps.approvals.models import ToolApproval
    from apps.approvals.services import approval_decide
    from apps.runs.resume import run_resume
    from apps.runs.services import run_create, runs_sweep_lapsed_leases
    from apps.spend.models import Ledger
    from tests.runs.delegating import ADD, delegating, gated_helper, run_of, task_call
    from tests.runs.test_delegation_outlives import slow_helper
    from tests.runs.worker import serving_worker

    api = client_for(owner, org)
    with FakeOpenAI(latency=0.2) as server:
        scout = slow_helper(org, server, name="Scout")
        critic = slow_helper(org, server, name="Critic")
        parent = delegating(org, scout, critic, config={"mode": "async"})
        # Two background delegations started in one model message, settling after the answer.
        two = "\n".join(
            [task_call("/tools 2 read_plan", "scout"), task_call("/tools 2 read_plan", "critic")]
        )
        late = run_of(member, org, parent, two, surface="chat")
        assert late.status == "completed", late.error
        children = list(Run.objects.filter(parent_run=late))
        assert len(children) == 2 and all(c.ended_at > late.ended_at for c in children)

        # A park inside a delegation, approved and continued; and a run still parked, whose row
        # shows what its ledger already holds.
        mailer = gated_helper(org)
        boss = delegating(org, mailer, name="Boss", config={"mode": "sync"})
        resumed = run_of(member, org, boss, task_call(ADD, "mailer"))
        assert resumed.status == "awaiting_approval", resumed.error
        approval_decide(
            actor=owner, approval=ToolApproval.objects.get(run=resumed), decision="approve"
        )
        run_resume(run_id=resumed.pk)
        resumed.refresh_from_db()
        assert resumed.status == "completed", resumed.error
        waiting = run_of(member, org, mailer, ADD)
        assert waiting.status == "awaiting_approval"
        shown = api.get(f"/api/v1/runs/{waiting.pk}/").json()
        ledger = Ledger.objects.get(run=waiting)
        assert shown["request_count"] == ledger.request_count >= 1
        assert D(shown["cost_usd"]) == ledger.cost_usd > 0

        # A worker that dies while the background delegation of an answered run still runs.
        with serving_worker(runs_per_worker=5, env={"RUN_LEASE_SECONDS": "3"}) as worker:
            dead = run_create(
                actor=member,
                organization=org,
                agent=parent,
                input=task_call("/tools 40 read_plan", "scout"),
            )
            running = wait_until(
                lambda: Run.objects.filter(parent_run=dead, status="running").first(),
                what=f"no running delegation: {worker.log[-3000:]}",
                timeout=60,
            )
            wait_until(
                lambda: (
                    LedgerEntry.objects.filter(
                        ledger__run=dead, billed_delegation=running.subagent_task_id
                    ).count()
                    >= 2
                ),
                what="the delegation made no requests",
                timeout=60,
            )
            # Answered, not final: the row says so, and shows what its ledger already holds.
            dead.refresh_from_db()
            assert (dead.status, dead.accruing) == ("completed", True)
            wait_until(
                lambda: Ledger.objects.get(run=dead).request_count > dead.request_count,
                what="the delegation booked nothing after the answer",
                timeout=60,
            )
            before = Ledger.objects.get(run=dead).request_count
            shown = api.get(f"/api/v1/runs/{dead.pk}/").json()
            after = Ledger.objects.get(run=dead).request_count
            assert shown["accruing"] is True
            assert before <= shown["request_count"] <= after
            worker.kill()
    # The lease lapses: the sweep looks from past its end rather than waiting for it.
    assert runs_sweep_lapsed_leases(now=timezone.now() + dt.timedelta(seconds=10)) == 1
    dead.refresh_from_db()
    child = Run.objects.get(parent_run=dead)
    assert (child.status, child.stop_reason) == ("failed", "worker_lost")
    assert dead.accruing is False and child.accruing is False
    assert api.get(f"/api/v1/runs/{dead.pk}/").json()["accruing"] is False

    # Every row is its ledger: the top-level rows their whole tree, a delegated row its own.
    for run in Run.objects.filter(organization=org, parent_run__isnull=True).exclude(
        status="awaiting_approval"
    ):
        ledger = Ledger.objects.get(run=run)
        assert (run.cost_usd, run.request_count) == (ledger.cost_usd, ledger.request_count), run
        entries = LedgerEntry.objects.filter(ledger=ledger)
        assert ledger.cost_usd == sum((e.cost_usd for e in entries), D("0"))
        billed = set(
            entries.exclude(billed_delegation="").values_list("billed_delegation", flat=True)
        )
        rows = {
            r.subagent_task_id: r
            for r in Run.objects.filter(pk__in=_tree_of(run)).exclude(pk=run.pk)
        }
        assert billed == set(rows), run
        for task_id, row in rows.items():
            own = entries.filter(billed_delegation=task_id)
            assert row.cost_usd == sum((e.cost_usd for e in own), D("0")), row
            assert row.request_count == own.filter(kind="model_request").count(), row

    # Every surface, for the month to now, equal to the cent.
    now = timezone.now()
    since = dt.datetime.combine(month_of(now), dt.time.min, tzinfo=dt.UTC)
    until = now + dt.timedelta(minutes=1)
    window = {"from": since.isoformat(), "to": until.isoformat()}
    ledger = ledger_of_window(org, since, until)
    model = ledger["model_usd"]
    assert model > 0
    spend = api.get("/api/v1/spend/", window).json()
    usage = api.get("/api/v1/stats/usage/", window).json()
    assert _cents(spend["total"]["model_usd"]) == model
    assert _cents(spend["total"]["cost_usd"]) == model  # no ingestion here
    assert sum(_cents(r["cost_usd"]) for r in spend["by_agent"]) == model
    assert sum(_cents(r["cost_usd"]) for r in spend["by_user"]) == model
    assert _cents(usage["cost"]["cost_usd"]) == model
    assert sum(_cents(r["cost_usd"]) for r in _csv(api.get("/api/v1/spend/export/", window))) == (
        model
    )
    run_window = {"started_from": since.isoformat(), "started_to": until.isoformat()}
    exported = _csv(api.get("/api/v1/runs/export/", run_window))
    assert sum(_cents(r["cost_usd"]) for r in exported) == model
    listed = _every_page(api, "/api/v1/runs/", run_window)
    assert sum(_cents(r["cost_usd"]) for r in listed) == model
    assert {r["id"] for r in listed} == {int(r["id"]) for r in exported}
    top = Run.objects.filter(organization=org, parent_run__isnull=True)
    assert sum((r.cost_usd for r in top), D("0")) == model
    # The approvals export: every gated call of the month, each on a run the bill holds.
    approvals = _csv(
        api.get(
            "/api/v1/approvals/export/",
            {
                "created_from": since.isoformat(),
                "created_to": until.isoformat(),
                # Every decision, not only the queue (pending is the default).
                "status": ["pending", "approved", "rejected", "expired"],
            },
        )
    )
    assert len(approvals) == ToolApproval.objects.filter(organization=org).count() == 2
    on_the_bill = {int(r["id"]) for r in exported} | set(
        Run.objects.filter(organization=org, parent_run__isnull=False).values_list("pk", flat=True)
    )
    assert {int(a["run_id"]) for a in approvals} <= on_the_bill
    # The organization's month and each agent's: the ledger's entries of the month.
    entries = LedgerEntry.objects.filter(organization=org, month=month_of(now))
    month_total = sum((e.cost_usd for e in entries), D("0"))
    assert month_total == model
    assert _cents(api.get(f"/api/v1/orgs/{org.pk}/").json()["month_to_date_usd"]) == month_total
    page = api.get("/api/v1/spend/", {"days": "30"}).json()
    assert _cents(page["organization"]["month_to_date_usd"]) == month_total
    for agent_row in page["by_agent"]:
        # An agent's month is what its cap is checked against: everything booked under the runs
        # it started, its delegates' requests included.
        own = entries.filter(ledger__agent_id=agent_row["agent_id"])
        assert _cents(agent_row["month_to_date_usd"]) == sum((e.cost_usd for e in own), D("0"))


def _tree_of(run: Run) -> list[int]:
    ids, frontier = [run.pk], [run.pk]
    while frontier:
        frontier = list(Run.objects.filter(parent_run_id__in=frontier).values_list("pk", flat=True))
        ids.extend(frontier)
    return ids
