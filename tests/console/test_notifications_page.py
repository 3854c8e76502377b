"""Notifications (issue 15): an approvals alert reads as resolved once its run no longer waits,
and a run that parks again does not add a second unread alert."""

import pytest

from apps.approvals.models import ToolApproval
from apps.approvals.services import approval_decide
from apps.notifications.models import Notification
from apps.notifications.services import notify_run_parked
from tests.approvals.factories import ADD_ONE, gated_agent, run_now

pytestmark = pytest.mark.django_db


def test_an_approvals_alert_is_resolved_once_decided_and_never_doubled(client, org, owner):
    run = run_now(owner, org, gated_agent(org, name="Gated"), ADD_ONE, surface="chat")
    notify_run_parked(run_id=run.pk)
    notify_run_parked(run_id=run.pk)  # parked again (or the alert sent twice): one unread alert
    alerts = Notification.objects.filter(user=owner, run=run)
    assert alerts.count() == 1

    client.force_login(owner)
    page = client.get("/notifications/").content.decode()
    item = page.split(f'data-run-id="{run.pk}"', 1)[1].split("</li>", 1)[0]
    assert "Waiting" in item and "Resolved" not in item

    approval_decide(actor=owner, approval=ToolApproval.objects.get(run=run), decision="approve")
    page = client.get("/notifications/").content.decode()
    item = page.split(f'data-run-id="{run.pk}"', 1)[1].split("</li>", 1)[0]
    assert "Resolved" in item and "nothing of run" in item
    assert 'class="notification resolved"' in page


def test_a_cap_refusing_run_after_run_adds_one_budget_alert_a_month(org, owner, admin, mailoutbox):
    from apps.notifications.services import notify_org_cap_reached

    notify_org_cap_reached(organization=org, limit_usd="100")
    notify_org_cap_reached(organization=org, limit_usd="100")
    assert Notification.objects.filter(user=admin, kind="budget").count() == 1
    Notification.objects.filter(user=admin).update(read_at="2026-01-01T00:00:00Z")
    # Read, then another run refused: the cap is still the same reached cap this month.
    notify_org_cap_reached(organization=org, limit_usd="100")
    assert Notification.objects.filter(user=admin, kind="budget").count() == 1
    assert [m.to for m in mailoutbox].count([admin.email]) == 1
