"""Sign-in lockout (django-axes, audited) and the API's rate limits (issue 13, defect 4).

The prober sent thirty wrong passwords in sixteen seconds and met no lockout, and the API had no
rate limit at all. These tests lower the limits for themselves; the suite's settings keep them out
of every other test's way (agenticos/settings/test.py).
"""

import pytest
from axes.models import AccessAttempt
from django.test import override_settings

from apps.audit.models import AuditEntry
from apps.orgs.services import api_key_create
from tests.factories import DEFAULT_PASSWORD


def _sign_in(client, email, password, address="10.1.1.1"):
    return client.post("/login/", {"username": email, "password": password}, REMOTE_ADDR=address)


@override_settings(AXES_FAILURE_LIMIT=3)
def test_wrong_passwords_lock_the_account_out_from_that_address(client, org, member):
    for _ in range(2):
        assert _sign_in(client, member.email, "wrong-password").status_code == 200
    locked = _sign_in(client, member.email, "wrong-password")
    assert locked.status_code == 429
    # Locked out means the right password is refused too, until the cool-off passes.
    assert _sign_in(client, member.email, DEFAULT_PASSWORD).status_code == 429
    assert "_auth_user_id" not in client.session


@override_settings(AXES_FAILURE_LIMIT=3)
def test_a_lockout_is_audited_in_the_deployment_and_the_persons_organizations(client, org, member):
    for _ in range(3):
        _sign_in(client, member.email, "wrong-password", address="10.2.2.2")
    entries = AuditEntry.objects.filter(action="auth.lockout")
    assert {entry.organization_id for entry in entries} == {None, org.pk}
    entry = entries.get(organization=org)
    assert entry.actor_id is None
    assert entry.details["ip_address"] == "10.2.2.2"
    assert entry.details["username"] == member.email


@override_settings(AXES_FAILURE_LIMIT=3)
def test_the_lockout_is_per_account_and_address_so_a_stranger_cannot_lock_a_person_out(
    client, org, member
):
    for _ in range(3):
        _sign_in(client, member.email, "wrong-password", address="10.3.3.3")
    response = _sign_in(client, member.email, DEFAULT_PASSWORD, address="10.4.4.4")
    assert response.status_code == 302


@override_settings(AXES_FAILURE_LIMIT=3)
def test_a_right_password_resets_the_count(client, org, member):
    _sign_in(client, member.email, "wrong-password", address="10.5.5.5")
    _sign_in(client, member.email, "wrong-password", address="10.5.5.5")
    assert _sign_in(client, member.email, DEFAULT_PASSWORD, address="10.5.5.5").status_code == 302
    assert not AccessAttempt.objects.filter(
        ip_address="10.5.5.5", failures_since_start__gt=0
    ).exists()


@override_settings(AXES_FAILURE_LIMIT=3)
def test_an_unknown_account_is_locked_out_and_audited_in_the_deployment_chain(client, db):
    for _ in range(3):
        _sign_in(client, "nobody@nowhere.test", "guess", address="10.6.6.6")
    entry = AuditEntry.objects.get(action="auth.lockout")
    assert entry.organization_id is None
    assert entry.subject_label == "nobody@nowhere.test"


def test_an_api_key_over_its_rate_is_a_429_with_retry_after(org, member, client_for):
    client = client_for(member, org)
    with override_settings(API_RATE_LIMIT="3/minute"):
        statuses = [client.get("/api/v1/orgs/").status_code for _ in range(4)]
        assert statuses == [200, 200, 200, 429]
        refused = client.get("/api/v1/orgs/")
    assert refused.status_code == 429
    assert int(refused["Retry-After"]) > 0
    assert "detail" in refused.json()


def test_each_key_has_its_own_count(org, member, owner, client_for):
    first, second = client_for(member, org), client_for(owner, org)
    with override_settings(API_RATE_LIMIT="2/minute"):
        assert [first.get("/api/v1/orgs/").status_code for _ in range(3)] == [200, 200, 429]
        assert second.get("/api/v1/orgs/").status_code == 200


def test_a_signed_in_person_is_limited_too(org, member, api_client):
    api_client.force_login(member)
    with override_settings(API_RATE_LIMIT="2/minute"):
        assert [api_client.get("/api/v1/orgs/").status_code for _ in range(3)] == [200, 200, 429]


def test_guessing_keys_from_one_address_is_a_429_after_the_limit(org, member, api_client):
    _, good_key = api_key_create(actor=None, organization=org, user=member, name="good")
    address = "10.7.7.7"
    with override_settings(API_KEY_FAILURE_LIMIT=3):
        api_client.credentials(HTTP_AUTHORIZATION="Bearer aos_guess")
        statuses = [
            api_client.get("/api/v1/orgs/", REMOTE_ADDR=address).status_code for _ in range(4)
        ]
        assert statuses == [401, 401, 401, 429]
        # Refused unchecked while blocked: even a right key, so guessing gains nothing.
        api_client.credentials(HTTP_AUTHORIZATION=f"Bearer {good_key}")
        assert api_client.get("/api/v1/orgs/", REMOTE_ADDR=address).status_code == 429
        # Another address is not affected.
        assert api_client.get("/api/v1/orgs/", REMOTE_ADDR="10.8.8.8").status_code == 200


@pytest.mark.parametrize("scheme", ["Bearer", "bearer", "BEARER"])
def test_the_bearer_scheme_is_case_insensitive(org, member, api_client, scheme):
    _, raw_key = api_key_create(actor=None, organization=org, user=member, name="k")
    api_client.credentials(HTTP_AUTHORIZATION=f"{scheme} {raw_key}")
    assert api_client.get("/api/v1/orgs/").status_code == 200
