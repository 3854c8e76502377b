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
