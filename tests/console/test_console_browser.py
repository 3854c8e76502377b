"""The console's main path in a real headless Chromium: log in, switch organization, change the
budget as owner, be refused as member."""

import pytest

from tests.factories import DEFAULT_PASSWORD, MembershipFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _log_in(page, live_server, email):
    page.goto(f"{live_server.url}/login/")
    page.fill("#id_username", email)
    page.fill("#id_password", DEFAULT_PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_selector("#org-switcher")


def test_owner_switches_org_and_changes_budget_member_is_refused(
    page, live_server, org, other_org, owner, member
):
    MembershipFactory(organization=other_org, user=owner, role="owner")

    _log_in(page, live_server, owner.email)
    page.select_option("#org-switcher", str(other_org.pk))
    page.wait_for_selector("h1:has-text('Globex')")

    page.select_option("#org-switcher", str(org.pk))
    page.wait_for_selector("h1:has-text('Acme')")
    page.goto(f"{live_server.url}/settings/organization/")
    page.fill("#id_monthly_budget_usd", "250")
    page.click("#organization-form button[type=submit]")
    page.wait_for_selector("text=Organization settings saved.")
    page.goto(f"{live_server.url}/")
    assert page.inner_text("#org-budget") == "$250.00"

    page.click(".logout button")
    _log_in(page, live_server, member.email)
    page.goto(f"{live_server.url}/settings/organization/")
    assert page.is_disabled("#id_monthly_budget_usd")
    assert page.is_visible("#budget-locked")
    response = page.goto(f"{live_server.url}/settings/members/")
    assert response.status == 403
    org.refresh_from_db()
    assert str(org.monthly_budget_usd) == "250.00"
