"""Settings (issue 15): provider keys and API keys named apart, destructive actions ask first,
an owner's own row cannot remove itself, a new API key has a copy button."""

from datetime import timedelta

import pytest
from django.utils import timezone

from apps.orgs.models import ApiKey, Membership
from tests.factories import DEFAULT_PASSWORD

pytestmark = pytest.mark.django_db


def test_provider_keys_and_api_keys_are_named_apart(client, owner):
    client.force_login(owner)
    settings = client.get("/settings/organization/").content.decode()
    assert ">Provider keys</a>" in settings and ">API keys</a>" in settings
    assert "<h1>Provider keys</h1>" in client.get("/settings/keys/").content.decode()
    api = client.get("/settings/api-keys/").content.decode()
    assert "<h1>API keys</h1>" in api and "Provider keys</a>" in api


def test_the_settings_navigation_marks_the_current_page(client, owner):
    client.force_login(owner)
    page = client.get("/settings/members/").content.decode()
    assert 'href="/settings/members/" aria-current="page"' in page
    assert 'href="/settings/organization/" aria-current="page"' in page  # main nav: Settings


def test_an_owner_cannot_remove_their_own_row(client, org, owner, member):
    client.force_login(owner)
    page = client.get("/settings/members/").content.decode()
    own = Membership.objects.get(organization=org, user=owner)
    other = Membership.objects.get(organization=org, user=member)
    assert f"/settings/members/{own.pk}/remove/" not in page
    assert f"/settings/members/{other.pk}/remove/" in page
    assert 'data-confirm="Remove member@acme.test' in page

    response = client.post(f"/settings/members/{own.pk}/remove/", follow=True)
    assert "You cannot remove yourself" in response.content.decode()
    assert Membership.objects.filter(pk=own.pk).exists()


def test_a_new_api_key_has_a_copy_button_and_revoking_asks_first(client, org, owner):
    client.force_login(owner)
    page = client.post("/settings/api-keys/", {"name": "CI"}).content.decode()
    assert 'data-copy="#new-key"' in page and 'id="new-key"' in page
    key = ApiKey.objects.get(organization=org, name="CI")
    assert key.prefix in page.split('id="new-key"', 1)[1][:80]
    assert 'data-confirm="Revoke the key CI' in page
    assert "Last used" in page and "never" in page


def test_a_new_api_key_may_expire_at_the_end_of_a_chosen_day(client, org, owner):
    client.force_login(owner)
    tomorrow = (timezone.now() + timedelta(days=1)).date()
    page = client.post(
        "/settings/api-keys/", {"name": "Short-lived", "expires_on": tomorrow.isoformat()}
    ).content.decode()
    key = ApiKey.objects.get(organization=org, name="Short-lived")
    assert key.expires_at.date() == tomorrow and key.expires_at > timezone.now()
    assert 'id="new-key"' in page and tomorrow.isoformat() in page

    yesterday = (timezone.now() - timedelta(days=1)).date().isoformat()
    refused = client.post("/settings/api-keys/", {"name": "Stale", "expires_on": yesterday})
    assert "must be in the future" in refused.content.decode()
    assert not ApiKey.objects.filter(name="Stale").exists()

    ApiKey.objects.filter(pk=key.pk).update(expires_at=timezone.now() - timedelta(minutes=1))
    listed = client.get("/settings/api-keys/").content.decode()
    assert "Expired" in listed.split("Short-lived", 1)[1].split("</tr>", 1)[0]


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_revoking_a_key_in_the_browser_asks_and_a_no_keeps_it(page, live_server, org, owner):
    from apps.orgs.services import api_key_create

    api_key_create(actor=owner, organization=org, user=owner, name="Deploy")
    page.goto(f"{live_server.url}/login/")
    page.fill("input[name=username]", owner.email)
    page.fill("input[name=password]", DEFAULT_PASSWORD)
    page.click("button[type=submit]")
    page.goto(f"{live_server.url}/settings/api-keys/")
    page.once("dialog", lambda dialog: dialog.dismiss())
    page.click("text=Revoke")
    page.wait_for_timeout(300)
    assert ApiKey.objects.get(name="Deploy").revoked_at is None
    page.once("dialog", lambda dialog: dialog.accept())
    page.click("text=Revoke")
    page.wait_for_selector("text=revoked.")
    assert ApiKey.objects.get(name="Deploy").revoked_at is not None
