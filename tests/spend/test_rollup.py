"""The per-day rollup (apps/spend/rollup.py) never disagrees with the ledger: a day served from it
moves when a late booking, a status change, a repricing or another transaction's write lands on
that day's runs, and a cached read equals the same window read live."""

from __future__ import annotations

import datetime as dt
import io
import threading
from decimal import Decimal

import pytest
from django.core.management import call_command
from django.db import connection, transaction
from django.utils import timezone

from apps.runs.models import Run
from apps.spend import rollup
from apps.spend.aggregates import (
    SpendScope,
    daily_series,
    spend_by_provider,
    spend_overview,
    spend_totals,
    usage_stats,
    window_slices,
)
from apps.spend.filters import SpendWindow, last_days
from apps.spend.models import Ledger, ModelPrice, SpendDayBuild, SpendDayChange
from apps.spend.usage_cards import usage_cards
from apps.vault.services import secret_create
from tests.runs.delegating import delegating, run_of, task_call
from tests.runs.factories import book_spend, compatible_profile, published_agent
from tests.runs.fake_openai import FakeOpenAI

from .builders import finished_run
from .reconciliation import place

D = Decimal


def _every_figure(scope, window, now) -> tuple:
    return (
        spend_overview(scope, window, now=now),
        usage_stats(scope, window),
        usage_cards(scope, window, group_by="version"),
    )


def assert_cached_equals_live(scope, window, now) -> None:
    cached = _every_figure(scope, window, now)
    with rollup.live_only():
        live = _every_figure(scope, window, now)
    assert cached == live


def _day(moment: dt.datetime) -> dt.date:
    return moment.astimezone(dt.UTC).date()


@pytest.mark.django_db
def test_a_parked_run_resumed_days_later_moves_its_closed_day(org, member):
    now = timezone.now()
    agent = published_agent(org, name="Helper")
    three_days_ago = now - dt.timedelta(days=3)
    parked = finished_run(agent, user=member, started_at=three_days_ago, status="awaiting_approval")
    scope, window = SpendScope(organization=org), last_days(7, now=now)

    before = spend_totals(scope, window)
    # The day was built and is read from the rollup, not live.
    assert _day(three_days_ago) in window_slices(scope, window).days
    assert SpendDayBuild.objects.filter(organization=org, day=_day(three_days_ago)).exists()
    assert before["cost_usd"] == 0 and before["run_count"] == 1
    assert usage_cards(scope, window)["approvals_waiting"] == 1

    # Resumed today: its requests are booked now, on the ledger of a run that started days ago.
    book_spend(parked, D("1.25"))
    Run.objects.filter(pk=parked.pk).update(status="completed")

    after = spend_totals(scope, window)
    assert after["model_usd"] == Ledger.objects.get(run=parked).cost_usd >= D("1.25")
    point = next(p for p in daily_series(scope, window) if p["date"] == _day(three_days_ago))
    assert point["model_usd"] == after["model_usd"]
    cards = usage_cards(scope, window)
    assert cards["approvals_waiting"] == 0 and cards["outcomes"] == {"completed": 1}
    assert_cached_equals_live(scope, window, now)


@pytest.mark.django_db
def test_a_delegate_booked_under_an_old_root_moves_the_roots_own_spend(org, member):
    now = timezone.now()
    parent_agent, delegate = published_agent(org, name="Boss"), published_agent(org, name="Aide")
    root = finished_run(
        parent_agent, cost="1.00", user=member, started_at=now - dt.timedelta(days=4)
    )
    scope, window = SpendScope(organization=org), last_days(7, now=now)
    assert {r["provider"]: r["cost_usd"] for r in spend_by_provider(scope, window)} == {
        "offline": D("1.00")
    }

    # Its delegation ran today (a resume after the approval): its own spend moves from the
    # root's provider row to its own, the bill stays the root's.
    finished_run(delegate, cost="0.40", parent=root, provider="anthropic")
    now = timezone.now()
    window = last_days(7, now=now)
    providers = {r["provider"]: r["cost_usd"] for r in spend_by_provider(scope, window)}
    assert providers == {"offline": D("0.60"), "anthropic": D("0.40")}
    assert_cached_equals_live(scope, window, now)


@pytest.mark.django_db
def test_an_update_no_figure_reads_logs_no_change(org, member):
    agent = published_agent(org, name="Helper")
    run = finished_run(agent, user=member, started_at=timezone.now() - dt.timedelta(days=2))

    def logged():  # one row per day and transaction; its seq moves with each change
        return list(SpendDayChange.objects.filter(organization_id=org.pk).values_list("day", "seq"))

    before = logged()
    assert [day for day, _ in before] == [_day(run.started_at)]
    Run.objects.filter(pk=run.pk).update(lease_expires_at=timezone.now())
    assert logged() == before
    Run.objects.filter(pk=run.pk).update(cost_usd=D("0.10"))
    assert logged()[0][1] > before[0][1]


@pytest.mark.django_db
def test_a_window_edge_inside_a_day_is_read_live_and_agrees(org, member):
    now = timezone.now()
    agent = published_agent(org, name="Helper")
    start = dt.datetime.combine(_day(now) - dt.timedelta(days=3), dt.time(9), tzinfo=dt.UTC)
    for hours in (0, 2, 5, 26, 30):
        finished_run(agent, cost="0.10", user=member, started_at=start + dt.timedelta(hours=hours))

    scope = SpendScope(organization=org)
    window = SpendWindow(since=start + dt.timedelta(hours=1), until=start + dt.timedelta(hours=27))
    slices = window_slices(scope, window)
    assert len(slices.live) == 2 and slices.days == []
    assert spend_totals(scope, window)["run_count"] == 3  # 2 h, 5 h and 26 h after nine
    wide = SpendWindow(since=start - dt.timedelta(hours=9), until=start + dt.timedelta(hours=27))
    assert window_slices(scope, wide).days == [_day(start)]
    assert spend_totals(scope, wide)["run_count"] == 4
    assert_cached_equals_live(scope, window, now)
    assert_cached_equals_live(scope, wide, now)


@pytest.mark.django_db(transaction=True)
def test_a_write_in_flight_while_a_day_is_built_makes_it_stale(org, member):
    """The race a cache has to survive: another transaction writes the day, the build reads it
    before that commits, the write commits after. The build's snapshot did not see it, so the
    day is stale and the next read rebuilds it."""
    now = timezone.now()
    agent = published_agent(org, name="Helper")
    when = now - dt.timedelta(days=5)
    scope, window = SpendScope(organization=org), last_days(7, now=now)
    wrote, built = threading.Event(), threading.Event()

    def writer():
        try:
            with transaction.atomic():
                finished_run(agent, cost="2.00", user=member, started_at=when)
                wrote.set()
                built.wait(30)
        finally:
            connection.close()

    thread = threading.Thread(target=writer)
    thread.start()
    assert wrote.wait(30)
    assert spend_totals(scope, window)["run_count"] == 0  # built while the write is in flight
    assert _day(when) in window_slices(scope, window).days
    built.set()
    thread.join(30)

    assert spend_totals(scope, window)["cost_usd"] == D("2.00")
    assert_cached_equals_live(scope, window, now)


CUSTOM = "acme-private-7b"


@pytest.mark.django_db(transaction=True)
def test_a_repricing_moves_the_closed_days_it_priced(
    org, owner, member, allow_local_model_requests
):
    now = timezone.now()
    with FakeOpenAI() as server:
        secret = secret_create(
            actor=owner, organization=org, name="k", purpose="openai_compatible", value="sk-1"
        )
        profile = compatible_profile(
            org, base_url=server.base_url, model_name=CUSTOM, secret=secret
        )
        researcher = published_agent(org, name="Researcher", model_profile_id=profile.pk)
        parent = run_of(member, org, delegating(org, researcher), task_call("look", "researcher"))
    place(parent, now - dt.timedelta(days=3))
    scope, window = SpendScope(organization=org), last_days(7, now=now)
    before = spend_totals(scope, window)
    assert before["partial_run_count"] == 1
    assert _day(now - dt.timedelta(days=3)) in window_slices(scope, window).days

    ModelPrice.objects.create(
        model_name=CUSTOM,
        input_usd_per_million=D("2"),
        output_usd_per_million=D("6"),
        applies_from=_day(now) - dt.timedelta(days=30),
    )
    call_command(
        "reprice",
        "--from",
        (_day(now) - dt.timedelta(days=5)).isoformat(),
        "--to",
        _day(now).isoformat(),
        stdout=io.StringIO(),
    )

    after = spend_totals(scope, window)
    assert after["partial_run_count"] == 0
    assert after["model_usd"] > before["model_usd"]
    assert after["model_usd"] == Run.objects.get(pk=parent.pk).cost_usd
    assert not any(row["partial_run_count"] for row in spend_by_provider(scope, window))
    assert_cached_equals_live(scope, window, now)


@pytest.mark.django_db
def test_today_is_built_by_the_hour_and_a_write_rebuilds_only_its_hour(org, member):
    agent = published_agent(org, name="Helper")
    run = finished_run(
        agent, cost="0.30", user=member, started_at=timezone.now() - dt.timedelta(seconds=1)
    )
    now = timezone.now()
    today, hour = _day(run.started_at), run.started_at.astimezone(dt.UTC).hour
    scope, window = SpendScope(organization=org), last_days(1, now=now)
    assert spend_totals(scope, window)["model_usd"] == D("0.30")

    def builds():
        return dict(
            SpendDayBuild.objects.filter(organization=org, day=today).values_list(
                "hour", "built_seq"
            )
        )

    before = builds()
    assert sorted(before) == list(range(24))  # today: one build per hour, no whole-day build
    Run.objects.filter(pk=run.pk).update(cost_usd=D("0.45"))
    assert spend_totals(scope, last_days(1))["model_usd"] == D("0.45")
    after = builds()
    assert {h for h in range(24) if after[h] != before[h]} == {hour}
    assert_cached_equals_live(scope, last_days(1), timezone.now())
