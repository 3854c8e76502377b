"""approvals/export and the admin."""

import csv
import io

import pytest
from django.test import Client
from django.utils import timezone

from apps.approvals.models import ToolApproval
from apps.audit.models import AuditEntry

from .factories import ADD_ONE, gated_agent, run_now


@pytest.mark.django_db
def test_the_export_carries_the_log_with_emails_and_is_audited(org, member, operator, client_for):
    run = run_now(member, org, gated_agent(org), ADD_ONE)
    approval = ToolApproval.objects.get(run=run)
    client = client_for(operator, org)
    client.post(
        f"/api/v1/approvals/{approval.pk}/decide/",
        {"decision": "approve", "note": "ok"},
        format="json",
    )
    today = timezone.localdate().isoformat()

    response = client.get(
        f"/api/v1/approvals/export/?created_from={today}&created_to={today}&status=approved"
    )

    assert response.status_code == 200
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert [
        (r["id"], r["status"], r["triggered_by_email"], r["decided_by_email"], r["note"])
        for r in rows
    ] == [(str(approval.pk), "approved", member.email, operator.email, "ok")]
    entry = AuditEntry.objects.get(action="approvals.export")
    assert entry.details["row_count"] == 1


@pytest.mark.django_db
def test_the_export_needs_both_dates_and_approvals_decide(org, operator, builder, client_for):
    assert client_for(operator, org).get("/api/v1/approvals/export/").status_code == 422
    today = timezone.localdate().isoformat()
    assert (
        client_for(builder, org)
        .get(f"/api/v1/approvals/export/?created_from={today}&created_to={today}")
        .status_code
        == 403
    )


@pytest.mark.django_db
def test_the_admin_lists_and_searches_approvals(org, member, app_admin):
    run_now(member, org, gated_agent(org), ADD_ONE)
    client = Client()
    client.force_login(app_admin)
    page = client.get("/admin/approvals/toolapproval/?q=add_task&status__exact=pending")
    assert page.status_code == 200 and "add_task" in page.content.decode()
