"""The strict cap: concurrent runs see each other's in-flight requests (docs/budgets.md).

Seed 003 admits that fifty runs starting together against an organization one call from its cap
all read the same baseline and overshoot by their combined cost. With reservations on a shared,
locked counter the overshoot is bounded by one request.
"""

import threading
from decimal import Decimal

import pytest
from django.db import connection

from apps.runs.models import Run
from apps.runs.runner import execute_run
from apps.spend.models import BudgetCounter, LedgerEntry
from tests.runs.factories import book_spend, published_agent, queued_run

RUNS = 16


def run_all_at_once(runs):
    start = threading.Barrier(len(runs))
    errors = []

    def go(run_id):
        try:
            start.wait()
            execute_run(run_id)
        except BaseException as error:  # reported below
            errors.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=go, args=(run.pk,)) for run in runs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert errors == []


@pytest.mark.django_db(transaction=True)
def test_concurrent_runs_against_a_cap_one_request_away_make_one_request_in_all(org, member):
    org.monthly_budget_usd = Decimal("1")
    org.save(update_fields=["monthly_budget_usd"])
    agent = published_agent(org)
    earlier = queued_run(member, org, agent, "earlier")
    book_spend(earlier, Decimal("0.9998"))  # less headroom than one request costs
    Run.objects.filter(pk=earlier.pk).update(status="completed")
    runs = [queued_run(member, org, agent, f"run {n}") for n in range(RUNS)]

    run_all_at_once(runs)

    statuses = sorted(
        Run.objects.filter(pk__in=[r.pk for r in runs]).values_list("status", flat=True)
    )
    assert statuses.count("completed") == 1
    assert statuses.count("budget_exceeded") == RUNS - 1
    assert LedgerEntry.objects.filter(ledger__run__in=runs).count() == 1
    counter = BudgetCounter.objects.get(organization=org, scope="organization")
    assert counter.reserved_usd == 0
    one_request = LedgerEntry.objects.get(ledger__run__in=runs).cost_usd
    assert counter.committed_usd <= Decimal("1") + one_request


@pytest.mark.django_db(transaction=True)
def test_concurrent_multi_step_runs_overshoot_the_cap_by_at_most_one_request(org, member):
    org.monthly_budget_usd = Decimal("1")
    org.save(update_fields=["monthly_budget_usd"])
    agent = published_agent(org, limits={"max_steps": 50})
    earlier = queued_run(member, org, agent, "earlier")
    book_spend(earlier, Decimal("0.98"))  # room for a few dozen requests, not for all of them
    Run.objects.filter(pk=earlier.pk).update(status="completed")
    runs = [queued_run(member, org, agent, "/steps 20") for _ in range(RUNS)]

    run_all_at_once(runs)

    entries = LedgerEntry.objects.filter(organization=org)
    largest = max(entries.values_list("cost_usd", flat=True))
    counter = BudgetCounter.objects.get(organization=org, scope="organization")
    assert counter.reserved_usd == 0
    assert counter.committed_usd == sum(entries.values_list("cost_usd", flat=True))
    assert Decimal("1") <= counter.committed_usd <= Decimal("1") + largest
    assert (
        Run.objects.filter(pk__in=[r.pk for r in runs], status="budget_exceeded").count()
        >= RUNS - 1
    )
