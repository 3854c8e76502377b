"""The inbox and Settings → Notifications: a person's opt-outs subtract last."""

import pytest

from apps.notifications.models import Notification, NotificationOptOut
from apps.notifications.services import notify_org_cap_reached

pytestmark = pytest.mark.django_db


def test_opting_out_of_budget_email_keeps_the_in_app_notification(
    client, org, owner, admin, mailoutbox
):
    client.force_login(owner)
    page = client.get("/settings/notifications/")
    assert page.status_code == 200
    keep = ["budget:in_app", "approvals:email", "approvals:in_app", "usage:email", "usage:in_app"]
    client.post("/settings/notifications/", {"receive": keep})
    assert set(NotificationOptOut.objects.filter(user=owner).values_list("kind", "channel")) == {
        ("budget", "email")
    }

    notify_org_cap_reached(organization=org, limit_usd=100)
    assert owner.email not in {address for message in mailoutbox for address in message.to}
    assert admin.email in {address for message in mailoutbox for address in message.to}
    assert Notification.objects.filter(user=owner, kind="budget").exists()


def test_turning_everything_back_on_clears_the_opt_outs(client, owner):
    NotificationOptOut.objects.create(user=owner, kind="usage", channel="email")
    client.force_login(owner)
    every = [f"{k}:{c}" for k in ("budget", "approvals", "usage") for c in ("email", "in_app")]
    client.post("/settings/notifications/", {"receive": every})
    assert not NotificationOptOut.objects.filter(user=owner).exists()


def test_inbox_shows_this_organizations_notifications_and_marks_them_read(
    client, org, other_org, owner
):
    from tests.factories import MembershipFactory

    MembershipFactory(organization=other_org, user=owner, role="owner")
    Notification.objects.create(
        organization=org, user=owner, kind="budget", title="Acme cap reached", link="/x?org=1"
    )
    Notification.objects.create(
        organization=other_org, user=owner, kind="budget", title="Globex cap reached"
    )
    client.force_login(owner)
    page = client.get(f"/notifications/?org={org.pk}")
    body = page.content.decode()
    assert "Acme cap reached" in body and "Globex cap reached" not in body
    assert page.context["unread_notifications"] == 1
    client.post("/notifications/read/")
    assert client.get("/notifications/").context["unread_notifications"] == 0
