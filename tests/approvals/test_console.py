"""The console's Approvals tab: the queue with controls, the log without them."""

import pytest
from django.test import Client

from apps.approvals.models import ToolApproval

from .factories import ADD_ONE, gated_agent, run_now


def console(user):
    client = Client()
    client.force_login(user)
    return client


@pytest.mark.django_db
def test_the_queue_shows_pending_calls_with_controls_and_decided_ones_without(
    org, member, operator
):
    agent = gated_agent(org)
    waiting = run_now(member, org, agent, ADD_ONE)
    decided = run_now(member, org, agent, ADD_ONE)
    row = ToolApproval.objects.get(run=decided)
    response = console(operator).post(
        f"/approvals/{row.pk}/decide/", {"decision": "reject", "note": "no"}
    )
    assert response.status_code == 302

    page = console(operator).get("/approvals/").content.decode()
    pending = ToolApproval.objects.get(run=waiting)
    assert f'id="approval-{pending.pk}"' in page
    assert f'id="decided-{row.pk}"' in page
    log = page[page.index('id="approval-log"') :]
    assert "Approve</button>" not in log and "Rejected by" in log
    assert "Oldest wait:" in page


@pytest.mark.django_db
def test_someone_without_approvals_decide_is_sent_to_the_run_history(org, builder):
    response = console(builder).get("/approvals/")
    assert response.status_code == 302 and response["Location"] == "/activity/"


@pytest.mark.django_db
def test_deciding_twice_from_the_console_says_so(org, member, operator):
    run = run_now(member, org, gated_agent(org), ADD_ONE)
    row = ToolApproval.objects.get(run=run)
    console(operator).post(f"/approvals/{row.pk}/decide/", {"decision": "approve"})
    page = (
        console(operator)
        .post(f"/approvals/{row.pk}/decide/", {"decision": "reject"}, follow=True)
        .content.decode()
    )
    assert "already decided" in page
    row.refresh_from_db()
    assert row.status == "approved"
