"""Invitations in a real headless Chromium: the owner invites from the Members page, the invited
person opens the e-mail's link signed in and accepts; both pages pass axe at a phone's width."""

from __future__ import annotations

import re

import pytest
from django.core import mail

from apps.orgs.models import Membership
from tests.console.test_design_browser import PHONE, _sideways_overflow, _violations, sign_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_an_invitation_from_the_members_page_is_accepted_on_its_link(
    page, live_server, org, owner, outsider
):
    page.set_viewport_size(PHONE)
    sign_in(page, live_server.url, owner)
    page.goto(f"{live_server.url}/settings/members/")
    page.fill("#id_email", outsider.email)
    page.select_option("#id_role", "builder")
    page.click("form.form button[type=submit]")
    page.wait_for_selector(f"text=An invitation was sent to {outsider.email}")
    # Axe on the page as it stands after the flash message (whose markup is the console base's,
    # checked elsewhere): the invitations table and the form.
    page.reload()
    assert page.is_visible("text=Withdraw")
    assert _violations(page) == [] and _sideways_overflow(page) <= 0
    assert not Membership.objects.filter(organization=org, user=outsider).exists()

    token = re.search(r"/invitations/([A-Za-z0-9_-]+)/", mail.outbox[-1].body).group(1)
    page.context.clear_cookies()  # signed out (the phone layout folds the log-out button)
    sign_in(page, live_server.url, outsider)
    page.goto(f"{live_server.url}/invitations/{token}/")
    page.wait_for_selector("text=Accept and join")
    assert _violations(page) == [] and _sideways_overflow(page) <= 0
    page.click("text=Accept and join")
    page.wait_for_selector(f"text=You joined {org.name}.")
    assert Membership.objects.get(organization=org, user=outsider).role == "builder"
