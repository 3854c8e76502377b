"""The Django admin as an operator's home (issue 15): runs, approvals, ledger entries and spend
export as CSV and JSONL through the one exporter (window, 10,000-row cap, one audit entry);
pending calls are approved or rejected from the admin through the same service (a second
decision is refused); runs are cancelled; a run's page shows its turns, steps, approvals and
ledger entries; the runs changelist costs the same number of queries for 3 runs or 12."""

import json
from decimal import Decimal

import pytest
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from apps.approvals.models import ToolApproval
from apps.audit.models import AuditEntry
from apps.runs.models import Run
from apps.spend.models import Ledger, LedgerEntry
from tests.approvals.factories import ADD_ONE, gated_agent, run_now
from tests.runs.factories import published_agent, queued_run

pytestmark = pytest.mark.django_db


def _action(client, model, action, ids, *, follow=False, **extra):
    url = reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist")
    data = {"action": action, ACTION_CHECKBOX_NAME: [str(i) for i in ids], **extra}
    return client.post(url, data, follow=follow)


@pytest.fixture
def finished_run(org, owner):
    agent = published_agent(org, name="Helper")
    return run_now(owner, org, agent, "Hello there", surface="chat")


@pytest.fixture
def parked_run(org, owner):
    return run_now(owner, org, gated_agent(org, name="Gated"), ADD_ONE, surface="chat")


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
@pytest.mark.parametrize(
    ("model", "action", "audit_action"),
    [
        (Run, "export_runs", "runs.export"),
        (ToolApproval, "export_approvals", "approvals.export"),
        (LedgerEntry, "export_ledger_entries", "ledger_entries.export"),
        (Ledger, "export_spend", "spend.export"),
    ],
    ids=["runs", "approvals", "ledger-entries", "spend"],
)
def test_each_operator_table_exports_through_the_one_exporter(
    client, app_admin, org, parked_run, finished_run, model, action, audit_action, fmt
):
    client.force_login(app_admin)
    rows = model.objects.all()
    ids = list(rows.values_list("pk", flat=True))
    assert ids
    response = _action(client, model, f"{action}_{fmt}", ids)
    assert response.status_code == 200, response.content[:500]
    assert response["Content-Disposition"].endswith(f'.{fmt}"')
    body = response.content.decode()
    assert int(response["X-Row-Count"]) == len(ids)
    if fmt == "jsonl":
        assert len([json.loads(line) for line in body.splitlines()]) == len(ids)
    else:
        assert len(body.strip().splitlines()) == len(ids) + 1  # a header, a row each
    entry = AuditEntry.objects.get(action=audit_action)
    assert entry.organization_id == org.pk  # one organization's rows: its own trail
    assert entry.details["surface"] == "admin" and entry.details["row_count"] == len(ids)
    assert entry.details["window"]["from"] and entry.details["window"]["to"]


def test_an_export_over_the_limit_is_refused_with_the_count(
    client, app_admin, org, finished_run, small_export_row_limit
):
    ledger = Ledger.objects.get(run=finished_run)
    month = LedgerEntry.objects.filter(ledger=ledger).first().month
    LedgerEntry.objects.bulk_create(
        LedgerEntry(
            ledger=ledger,
            organization=org,
            agent=finished_run.agent,
            month=month,
            cost_usd=Decimal("0.01"),
        )
        for _ in range(small_export_row_limit + 1 - LedgerEntry.objects.count())
    )
    client.force_login(app_admin)
    # "Select all 11": the whole changelist, as an operator ticks it.
    first = LedgerEntry.objects.values_list("pk", flat=True)[:1]
    response = _action(
        client, LedgerEntry, "export_ledger_entries_csv", first, select_across="1", follow=True
    )
    page = response.content.decode()
    assert "Not exported" in page and "11 rows match" in page
    assert not AuditEntry.objects.filter(action="ledger_entries.export").exists()


def test_a_pending_call_is_approved_from_the_admin_with_a_note_and_a_second_decision_is_refused(
    client, app_admin, org, parked_run
):
    approval = ToolApproval.objects.get(run=parked_run)
    client.force_login(app_admin)
    # The action first asks for the note.
    page = _action(client, ToolApproval, "approve_calls", [approval.pk]).content.decode()
    assert 'name="note"' in page and "add_task" in page
    response = _action(
        client, ToolApproval, "approve_calls", [approval.pk], confirm="yes", note="Checked by ops"
    )
    assert response.status_code == 302
    approval.refresh_from_db()
    assert approval.status == "approved" and approval.note == "Checked by ops"
    assert approval.decided_by == app_admin
    assert AuditEntry.objects.filter(
        action="approval.approve", subject_id=str(approval.pk)
    ).exists()

    response = _action(
        client,
        ToolApproval,
        "reject_calls",
        [approval.pk],
        confirm="yes",
        note="Too late",
        follow=True,
    )
    assert "already decided: it is approved" in response.content.decode()
    approval.refresh_from_db()
    assert approval.status == "approved"


def test_a_pending_call_is_rejected_from_the_admin(client, app_admin, org, parked_run):
    approval = ToolApproval.objects.get(run=parked_run)
    client.force_login(app_admin)
    _action(
        client, ToolApproval, "reject_calls", [approval.pk], confirm="yes", note="No emails today"
    )
    approval.refresh_from_db()
    assert approval.status == "rejected" and approval.note == "No emails today"


def test_runs_are_cancelled_from_the_admin_and_finished_ones_left_alone(
    client, app_admin, org, owner, finished_run
):
    queued = queued_run(owner, org, finished_run.agent, "later")
    client.force_login(app_admin)
    response = _action(client, Run, "cancel_runs", [queued.pk, finished_run.pk], follow=True)
    page = response.content.decode()
    queued.refresh_from_db()
    finished_run.refresh_from_db()
    assert queued.status == "cancelled" and finished_run.status == "completed"
    assert "1 run(s) had already ended" in page
    assert AuditEntry.objects.filter(action="run.cancel", subject_id=str(queued.pk)).exists()


def test_a_runs_page_shows_its_turns_steps_approvals_and_ledger_entries(
    client, app_admin, parked_run
):
    client.force_login(app_admin)
    page = client.get(reverse("admin:runs_run_change", args=[parked_run.pk])).content.decode()
    assert "Transcript (turns)" in page and ADD_ONE.split(" ")[0] in page
    assert "Run steps" in page and "add_task" in page
    assert "Ledger entries" in page and "priced" in page
    assert '"part_kind"' not in page  # not the stored transcript as a JSON blob


def test_readable_names(client, app_admin, finished_run):
    assert LedgerEntry._meta.verbose_name_plural == "ledger entries"
    client.force_login(app_admin)
    page = client.get(reverse("admin:runs_run_changelist")).content.decode()
    assert f"Run #{finished_run.pk} — Helper — Completed" in page


def test_the_runs_changelist_costs_the_same_queries_for_3_runs_or_12(client, app_admin, org, owner):
    agent = published_agent(org, name="Helper")
    client.force_login(app_admin)
    url = reverse("admin:runs_run_changelist")

    def queries_for(count):
        while Run.objects.count() < count:
            queued_run(owner, org, agent, "hi")
        client.get(url)  # warm: the first page of a session also loads caches
        with CaptureQueriesContext(connection) as captured:
            assert client.get(url).status_code == 200
        return len(captured)

    few = queries_for(3)
    assert few == queries_for(12)
    assert few <= 12
