"""The expiry reminder: APPROVAL_EXPIRY_WARNING_HOURS before the sweep denies a call by time,
the approval audience hears it once, deciders with the link to the queue — so nothing is denied
silently."""

import datetime as dt

import pytest
from django.core import mail
from django.utils import timezone

from apps.approvals import services
from apps.approvals.models import ToolApproval
from apps.approvals.tasks import expire_stale_approvals
from apps.notifications.models import Notification

from .factories import ADD_ONE, ADD_TWO, gated_agent, run_now


def _aged(run, hours: float) -> None:
    ToolApproval.objects.filter(run=run).update(
        created_at=timezone.now() - dt.timedelta(hours=hours)
    )


@pytest.mark.django_db
def test_the_hourly_sweep_reminds_once_before_the_expiry_with_the_queue_link(
    org, owner, operator, member, settings
):
    settings.APPROVAL_EXPIRY_HOURS, settings.APPROVAL_EXPIRY_WARNING_HOURS = 72, 12
    settings.AGENTICOS_PUBLIC_URL = "https://agents.example/"
    run = run_now(member, org, gated_agent(org, name="Mailer"), ADD_TWO)
    assert run.status == "awaiting_approval"
    _aged(run, 61)  # 11 hours before it expires: inside the warning
    mail.outbox.clear()

    expire_stale_approvals()  # the hourly task: expire what is past, remind what is close

    by_person = {m.to[0]: m for m in mail.outbox}
    # The approval audience (the initiator and the admins), split by approvals:decide.
    assert set(by_person) == {owner.email, member.email}
    request = by_person[owner.email]
    assert request.subject.startswith("Mailer: an approval expires at ")
    assert f"https://agents.example/runs?tab=approvals&org={org.pk}" in request.body
    assert "add_task" in request.body and f"Run #{run.pk}" in request.body
    fact = by_person[member.email]
    assert "Nothing is asked of you" in fact.body and "http" not in fact.body
    assert ToolApproval.objects.filter(run=run, expiry_reminder_sent_at__isnull=False).count() == 2
    assert Notification.objects.filter(user=owner, title=request.subject).count() == 1

    # Once per approval: the next hour's sweep says nothing more.
    mail.outbox.clear()
    expire_stale_approvals()
    assert mail.outbox == []
    # The call is still pending: the reminder decides nothing.
    assert set(ToolApproval.objects.filter(run=run).values_list("status", flat=True)) == {"pending"}


@pytest.mark.django_db
def test_no_reminder_before_the_warning_or_after_the_expiry_or_when_turned_off(
    org, owner, member, settings
):
    settings.APPROVAL_EXPIRY_HOURS, settings.APPROVAL_EXPIRY_WARNING_HOURS = 72, 12
    early = run_now(member, org, gated_agent(org), ADD_ONE)
    _aged(early, 59)
    late = run_now(member, org, gated_agent(org, name="Late"), ADD_ONE)
    _aged(late, 73)
    mail.outbox.clear()
    assert services.approvals_remind_expiring() == 0
    assert mail.outbox == []

    settings.APPROVAL_EXPIRY_WARNING_HOURS = 0
    _aged(early, 65)
    assert services.approvals_remind_expiring() == 0

    settings.APPROVAL_EXPIRY_WARNING_HOURS = 12
    assert services.approvals_remind_expiring() == 1


@pytest.mark.django_db
def test_a_decided_call_is_not_reminded(org, owner, member, settings):
    run = run_now(member, org, gated_agent(org), ADD_ONE)
    approval = ToolApproval.objects.get(run=run)
    services.approval_decide(actor=owner, approval=approval, decision="reject", note="no")
    _aged(run, settings.APPROVAL_EXPIRY_HOURS - 1)
    mail.outbox.clear()
    assert services.approvals_remind_expiring() == 0
    assert mail.outbox == []
