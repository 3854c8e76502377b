"""Spend benchmark (`make bench`): GET /spend and GET /stats/usage over a large month.

The reconciliation generator (tests/spend/reconciliation.py) builds a real month through the
services — delegation trees, unpriced models, ingestion, the lot — and this benchmark then copies
its trees in the database (INSERT … SELECT over generate_series: rows, ledgers and entries, ids
and parent links remapped, timestamps spread over the 30 days) until SPEND_BENCH_RUNS top-level
runs exist (default 200,000; one million works given the time and the disk). It asserts the copy
still reconciles (/spend's total = its by-agent sum = the ledger) and prints p50/p95 of each
endpoint; the goal is p95 ≤ 200 ms. SPEND_BENCH_PROFILE=1 also times each selector once.
"""

from __future__ import annotations

import os
import statistics
import time
from decimal import Decimal

import pytest
from django.db import connection
from django.db.models import F
from django.utils import timezone
from rest_framework.test import APIClient

from apps.runs.models import Run
from apps.spend.models import Ledger, LedgerEntry, SpendDayBuild
from tests.runs.fake_openai import FakeOpenAI
from tests.spend.reconciliation import build_month, cast_for

RUNS = int(os.environ.get("SPEND_BENCH_RUNS", "200000"))
REQUESTS = int(os.environ.get("SPEND_BENCH_REQUESTS", "20"))
GOAL_MS = 200


def _columns(model) -> list[str]:
    return [f.column for f in model._meta.concrete_fields if not getattr(f, "generated", False)]


def _copy_trees(organization_id: int, copies: int, stride: int) -> None:
    """``copies`` more of every run of the organization (its trees, their ledgers and entries),
    copy n moved back by n hours modulo 30 days, ids shifted by n × stride."""
    shift = "make_interval(hours => (g.n * 7) %% 720, secs => (g.n * 13) %% 3600)"
    run_cols = _columns(Run)
    run_values = []
    for column in run_cols:
        if column == "id":
            run_values.append(f"r.id + g.n * {stride}")
        elif column == "parent_run_id":
            run_values.append(f"r.parent_run_id + g.n * {stride}")
        elif column in ("created_at", "started_at", "ended_at", "last_transition_at"):
            run_values.append(f"r.{column} - {shift}")
        elif column == "conversation_id":
            run_values.append("NULL")  # copies have no transcript of their own
        else:
            run_values.append(f"r.{column}")
    ledger_cols = _columns(Ledger)
    ledger_values = [
        f"l.id + g.n * {stride}"
        if c == "id"
        else f"l.run_id + g.n * {stride}"
        if c == "run_id"
        else f"l.{c} - {shift}"
        if c in ("created_at", "updated_at")
        else f"l.{c}"
        for c in ledger_cols
    ]
    entry_cols = [c for c in _columns(LedgerEntry) if c != "id"]
    entry_values = [
        f"e.ledger_id + g.n * {stride}"
        if c == "ledger_id"
        else f"e.created_at - {shift}"
        if c == "created_at"
        else f"date_trunc('month', e.created_at - {shift})::date"
        if c == "month"
        else f"e.{c}"
        for c in entry_cols
    ]
    series = f"generate_series(1, {copies}) AS g(n)"
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO runs_run ({', '.join(run_cols)}) SELECT {', '.join(run_values)} "
            f"FROM runs_run r, {series} WHERE r.organization_id = %s AND r.id < %s "
            "ORDER BY g.n, r.parent_run_id NULLS FIRST, r.id",
            [organization_id, stride],
        )
        cursor.execute(
            f"INSERT INTO spend_ledger ({', '.join(ledger_cols)}) SELECT {', '.join(ledger_values)} "
            f"FROM spend_ledger l, {series} WHERE l.organization_id = %s AND l.id < %s",
            [organization_id, stride],
        )
        cursor.execute(
            f"INSERT INTO spend_ledgerentry ({', '.join(entry_cols)}) "
            f"SELECT {', '.join(entry_values)} FROM spend_ledgerentry e, {series} "
            "WHERE e.organization_id = %s AND e.ledger_id IS NOT NULL AND e.ledger_id < %s",
            [organization_id, stride],
        )
        for table in ("runs_run", "spend_ledger"):
            cursor.execute(
                f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), (SELECT max(id) FROM {table}))"
            )
        cursor.execute("ANALYZE runs_run; ANALYZE spend_ledger; ANALYZE spend_ledgerentry")


def _time(client, path, params) -> list[float]:
    timings = []
    for _ in range(REQUESTS):
        started = time.perf_counter()
        response = client.get(path, params)
        timings.append((time.perf_counter() - started) * 1000)
        assert response.status_code == 200, response.content[:200]
    return timings


def _profile(organization) -> None:
    """SPEND_BENCH_PROFILE=1: each selector behind the two endpoints, timed once."""
    from apps.spend import aggregates
    from apps.spend.filters import last_days
    from apps.spend.usage_cards import usage_cards

    scope, window = aggregates.SpendScope(organization=organization), last_days(30)
    for name in (
        "spend_totals",
        "spend_by_agent",
        "spend_by_provider",
        "spend_by_key",
        "spend_by_user",
        "daily_series",
        "crossing_floor_trees",
        "usage_stats",
    ):
        started = time.perf_counter()
        getattr(aggregates, name)(scope, window)
        print(f"  {name:<24} {(time.perf_counter() - started) * 1000:7.1f} ms")
    started = time.perf_counter()
    usage_cards(scope, window)
    print(f"  {'usage_cards':<24} {(time.perf_counter() - started) * 1000:7.1f} ms")


@pytest.mark.bench
@pytest.mark.timeout(3600)  # a million runs take minutes to copy
@pytest.mark.django_db(transaction=True)
def test_bench_spend_and_usage_over_a_large_month():
    from pydantic_ai import models

    from apps.orgs.choices import Role
    from apps.orgs.services import api_key_create
    from tests.factories import OrganizationFactory, member_of

    org = OrganizationFactory(name="Acme", slug="acme")
    owner = member_of(org, Role.OWNER, "owner@acme.test")
    member = member_of(org, Role.MEMBER, "member@acme.test")
    models.ALLOW_MODEL_REQUESTS = True  # the OpenAI-compatible server on 127.0.0.1 only
    with FakeOpenAI() as server:
        cast = cast_for(org, owner, member, server.base_url)
        build_month(cast, seed=24, runs=16)
    template = Run.objects.filter(organization=org, parent_run__isnull=True).count()
    stride = 10 ** len(str(Run.objects.order_by("-pk").values_list("pk", flat=True).first()))
    copies = max(0, RUNS // template - 1)
    started = time.perf_counter()
    _copy_trees(org.pk, copies, stride)
    generated_s = time.perf_counter() - started
    top_level = Run.objects.filter(organization=org, parent_run__isnull=True).count()
    total_rows = Run.objects.filter(organization=org).count()
    entries = LedgerEntry.objects.filter(organization=org).count()

    _, raw_key = api_key_create(actor=None, organization=org, user=owner, name="bench")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw_key}")
    now = timezone.now()
    month = {"from": now.replace(day=1, hour=0, minute=0, second=0, microsecond=0).isoformat()}
    # The first read builds the per-day rollup of every day it touches (the month's too).
    started = time.perf_counter()
    body = client.get("/api/v1/spend/", {"days": "30"}).json()
    cold_s = time.perf_counter() - started
    built_days = SpendDayBuild.objects.filter(organization=org).count()
    # The copy still reconciles: the per-agent rows sum to the bill.
    assert sum(Decimal(row["cost_usd"]) for row in body["by_agent"]) == Decimal(
        body["total"]["model_usd"]
    )

    if os.environ.get("SPEND_BENCH_PROFILE"):
        _profile(org)
    results = {}
    for name, path, params in (
        ("/spend?days=30", "/api/v1/spend/", {"days": "30"}),
        ("/spend?from=month", "/api/v1/spend/", month),
        ("/stats/usage?days=30", "/api/v1/stats/usage/", {"days": "30"}),
        ("/stats/usage?days=7", "/api/v1/stats/usage/", {"days": "7"}),
    ):
        timings = sorted(_time(client, path, params))
        p95 = timings[max(0, int(round(0.95 * len(timings))) - 1)]
        results[name] = (statistics.median(timings), p95)

    # Under writes: a booking on one of today's runs makes today stale, so the next read rebuilds
    # that one day (the other 29 stay cached).
    today_run = (
        Run.objects.filter(organization=org, parent_run__isnull=True, started_at__date=now.date())
        .order_by("-pk")
        .first()
    )
    if today_run is not None:
        timings = []
        for _ in range(max(1, REQUESTS // 2)):
            Ledger.objects.filter(run=today_run).update(input_tokens=F("input_tokens") + 1)
            started = time.perf_counter()
            assert client.get("/api/v1/spend/", {"days": "30"}).status_code == 200
            timings.append((time.perf_counter() - started) * 1000)
        timings.sort()
        p95 = timings[max(0, int(round(0.95 * len(timings))) - 1)]
        results["/spend?days=30 after a write"] = (statistics.median(timings), p95)

    print(
        f"\nspend bench: {top_level:,} top-level runs ({total_rows:,} rows with delegations), "
        f"{entries:,} ledger entries, copied in {generated_s:.1f} s; the first read built "
        f"{built_days} days of rollup in {cold_s:.1f} s"
    )
    for name, (p50, p95) in results.items():
        verdict = "ok" if p95 <= GOAL_MS else f"over the {GOAL_MS} ms goal"
        print(f"  {name:<24} p50 {p50:7.1f} ms   p95 {p95:7.1f} ms   {verdict}")
