"""Repricing a floor: `agenticos reprice` prices the ledger's unpriced entries from their stored
tokens once an operator's price entry (or a newer genai-prices snapshot) knows the model, clears
the floor marks where every entry is priced, and writes one audit entry per model."""

from __future__ import annotations

import datetime as dt
import io
from decimal import Decimal

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from apps.audit.models import AuditEntry
from apps.runs.models import Message, Run
from apps.spend.models import BudgetCounter, LedgerEntry, ModelPrice
from apps.spend.services import month_of
from apps.vault.services import secret_create
from tests.runs.delegating import delegating, run_of, task_call
from tests.runs.factories import compatible_profile, published_agent
from tests.runs.fake_openai import FakeOpenAI

CUSTOM = "acme-private-7b"  # a model genai-prices has never heard of


@pytest.fixture
def unpriced(org, owner, member, allow_local_model_requests):
    """An offline orchestrator delegating to a researcher on a custom model (unpriced), and a
    top-level run of the researcher itself."""
    with FakeOpenAI() as server:
        secret = secret_create(
            actor=owner, organization=org, name="k", purpose="openai_compatible", value="sk-test-1"
        )
        profile = compatible_profile(
            org, base_url=server.base_url, model_name=CUSTOM, secret=secret
        )
        researcher = published_agent(org, name="Researcher", model_profile_id=profile.pk)
        orchestrator = delegating(org, researcher)
        parent = run_of(member, org, orchestrator, task_call("look it up", "researcher"))
        own = run_of(member, org, researcher, "what is new?")
    assert parent.status == own.status == "completed"
    return parent, Run.objects.get(parent_run=parent), own


def _reprice(*args) -> str:
    out = io.StringIO()
    today = timezone.now().date()
    call_command(
        "reprice",
        "--from",
        (today - dt.timedelta(days=1)).isoformat(),
        "--to",
        today.isoformat(),
        *args,
        stdout=out,
    )
    return out.getvalue()


def _operator_price(created_by=None):
    return ModelPrice.objects.create(
        model_name=CUSTOM,
        input_usd_per_million=Decimal("2"),
        output_usd_per_million=Decimal("6"),
        applies_from=timezone.now().date() - dt.timedelta(days=30),
        created_by=created_by,
    )


@pytest.mark.django_db(transaction=True)
def test_a_dry_run_says_what_would_change_and_writes_nothing(unpriced, org):
    parent, child, own = unpriced
    price = _operator_price()
    before = {run.pk: (run.cost_usd, run.cost_is_partial) for run in Run.objects.all()}
    assert before[child.pk][1] and before[own.pk][1] and before[own.pk][0] == 0

    output = _reprice("--dry-run")

    assert "Dry run — nothing written." in output
    assert f"openai_compatible/{CUSTOM}" in output
    assert f"operator price #{price.pk}" in output
    assert "not re-enforced retroactively" in output
    assert {run.pk: (run.cost_usd, run.cost_is_partial) for run in Run.objects.all()} == before
    assert not LedgerEntry.objects.filter(model_name=CUSTOM, priced=True).exists()
    assert not AuditEntry.objects.filter(action="spend.reprice").exists()


@pytest.mark.django_db(transaction=True)
def test_reprice_prices_the_floor_everywhere_and_writes_one_audit_entry(unpriced, org):
    parent, child, own = unpriced
    price = _operator_price()
    org_counter = BudgetCounter.objects.get(organization=org, agent=None, month=month_of())
    committed_before = org_counter.committed_usd
    parent_before = parent.cost_usd

    output = _reprice("--org", org.slug)

    assert "Repriced." in output and "not re-enforced retroactively" in output
    entries = LedgerEntry.objects.filter(model_name=CUSTOM)
    assert entries.exists() and not entries.filter(priced=False).exists()
    expected = {
        entry.pk: price.cost_usd(entry.input_tokens, entry.output_tokens) for entry in entries
    }
    assert all(entry.cost_usd == expected[entry.pk] > 0 for entry in entries)
    child_cost = sum(e.cost_usd for e in entries.filter(ledger__run=parent))
    own_cost = sum(e.cost_usd for e in entries.filter(ledger__run=own))

    parent.refresh_from_db(), child.refresh_from_db(), own.refresh_from_db()
    # The delegated row: its own entries, now priced, and no longer a floor.
    assert child.cost_usd == child_cost and child.cost_is_partial is False
    # The parent row is the whole ledger: its offline part plus the delegate's, exact now.
    assert parent.cost_usd == parent_before + child_cost and parent.cost_is_partial is False
    assert parent.ledger.cost_usd == parent.cost_usd and parent.ledger.cost_is_partial is False
    assert own.cost_usd == own_cost and own.cost_is_partial is False
    # The assistant turns still sum to their runs.
    for run in (parent, own):
        turns = Message.objects.filter(run=run, role="assistant")
        assert sum(t.cost_usd for t in turns) == run.cost_usd
        assert not turns.filter(cost_is_partial=True).exists()
    # The counters are a cache of the ledger.
    org_counter.refresh_from_db()
    assert org_counter.committed_usd == committed_before + child_cost + own_cost

    (audit,) = AuditEntry.objects.filter(action="spend.reprice")
    assert audit.organization == org and audit.actor is None
    assert audit.details["model"] == CUSTOM
    assert audit.details["price_source"] == f"operator price #{price.pk} from {price.applies_from}"
    assert Decimal(audit.details["before_usd"]) == 0
    assert Decimal(audit.details["after_usd"]) == child_cost + own_cost
    assert audit.details["caps"] == "not re-enforced retroactively"

    # Nothing left to price: a second run changes nothing and audits nothing.
    assert "No unpriced entries in the window." in _reprice()
    assert AuditEntry.objects.filter(action="spend.reprice").count() == 1


@pytest.mark.django_db(transaction=True)
def test_a_price_that_applies_only_later_leaves_the_floor(unpriced, org):
    ModelPrice.objects.create(
        model_name=CUSTOM,
        input_usd_per_million=Decimal("2"),
        output_usd_per_million=Decimal("6"),
        applies_from=timezone.now().date() + dt.timedelta(days=1),
    )
    output = _reprice()
    assert "no price known (still a floor)" in output
    assert not LedgerEntry.objects.filter(model_name=CUSTOM, priced=True).exists()
    assert not AuditEntry.objects.filter(action="spend.reprice").exists()


@pytest.mark.django_db
def test_bad_arguments_are_refused_by_name():
    with pytest.raises(CommandError, match="--from"):
        call_command("reprice", "--from", "yesterday", "--to", "2026-01-01")
    with pytest.raises(CommandError, match="before --from"):
        call_command("reprice", "--from", "2026-02-01", "--to", "2026-01-01")
    with pytest.raises(CommandError, match="no organization"):
        call_command("reprice", "--from", "2026-01-01", "--to", "2026-01-02", "--org", "nope")


@pytest.mark.django_db
def test_an_operator_price_is_kept_in_the_admin_and_audited(app_admin):
    from django.test import Client

    client = Client()
    client.force_login(app_admin)
    response = client.post(
        "/admin/spend/modelprice/add/",
        {
            "provider": "",
            "model_name": CUSTOM,
            "input_usd_per_million": "2",
            "output_usd_per_million": "6",
            "applies_from": "2026-01-01",
            "note": "our own GPU",
        },
    )
    assert response.status_code == 302, response.content[:500]
    price = ModelPrice.objects.get(model_name=CUSTOM)
    assert price.created_by == app_admin
    entry = AuditEntry.objects.get(action="spend.model_price.create")
    assert entry.actor == app_admin and entry.details["model"] == CUSTOM
