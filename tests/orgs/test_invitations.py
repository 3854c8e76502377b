"""Nobody joins an organization without saying yes (issue 32, item 4).

An admin used to add anyone's existing account to their organization and learn its id and full
name (`POST /memberships/` with another tenant's owner's e-mail → 201 with their name), and an
unknown e-mail got a new user id (accounts were enumerable). Now adding an address sends an
invitation; the answer is the same whether the address has an account or not; the person becomes
a member only when they accept it, signed in as that address.
"""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.core import mail
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from apps.audit.models import AuditEntry
from apps.orgs.choices import Role
from apps.orgs.models import Invitation, Membership, User
from tests.factories import DEFAULT_PASSWORD, UserFactory

LINK = re.compile(r"/invitations/([A-Za-z0-9_-]+)/")


@pytest.fixture
def invite(org, owner, client_for, django_capture_on_commit_callbacks):
    """Invite ``email`` through the API as the owner; the answer and the token from the e-mail."""
    client = client_for(owner, org)

    def send(email, role="builder"):
        with django_capture_on_commit_callbacks(execute=True):
            response = client.post(
                "/api/v1/memberships/", {"email": email, "role": role}, format="json"
            )
        assert response.status_code == 202, response.content
        message = mail.outbox[-1]
        assert message.to == [email.lower()]
        return response, LINK.search(message.body).group(1)

    return send


def signed_in(user) -> APIClient:
    client = APIClient()
    client.force_login(user)
    return client


def accept(client, token):
    return client.post("/api/v1/invitations/accept/", {"token": token}, format="json")


@pytest.mark.django_db
def test_inviting_another_tenants_owner_leaks_no_name_and_adds_no_one(org, outsider, invite):
    outsider.full_name = "Bea Secretname"
    outsider.save(update_fields=["full_name"])
    response, _token = invite(outsider.email)
    body = response.json()
    assert set(body) == {"email", "role", "status", "detail"}
    assert "Secretname" not in response.content.decode()
    assert str(outsider.pk) not in re.sub(r"[^0-9]+", " ", response.content.decode()).split()
    assert not Membership.objects.filter(organization=org, user=outsider).exists()
    # The audit trail the inviter's organization reads does not say either.
    entry = AuditEntry.objects.get(organization=org, action="invitation.create")
    assert "user_id" not in entry.details


@pytest.mark.django_db
def test_known_and_unknown_addresses_get_the_same_answer_and_no_account_is_made(
    org, outsider, invite
):
    known, _ = invite(outsider.email, role="member")
    unknown, _ = invite("nobody-yet@initech.test", role="member")
    assert known.status_code == unknown.status_code == 202
    assert known.json() | {"email": "", "detail": ""} == unknown.json() | {
        "email": "",
        "detail": "",
    }
    assert known.json()["detail"].replace(outsider.email, "X") == unknown.json()["detail"].replace(
        "nobody-yet@initech.test", "X"
    )
    assert not User.objects.filter(email="nobody-yet@initech.test").exists()
    # Both got the same e-mail (but for the link).
    first, second = mail.outbox[-2:]
    assert LINK.sub("", first.body) == LINK.sub("", second.body)


@pytest.mark.django_db
def test_the_invited_person_accepts_while_signed_in_and_only_then_is_a_member(
    org, outsider, invite
):
    _, token = invite(outsider.email, role="builder")
    assert not Membership.objects.filter(organization=org, user=outsider).exists()
    response = accept(signed_in(outsider), token)
    assert response.status_code == 200, response.content
    membership = Membership.objects.get(organization=org, user=outsider)
    assert membership.role == Role.BUILDER and response.json()["role"] == "builder"
    assert AuditEntry.objects.filter(
        organization=org, action="invitation.accept", actor=outsider
    ).exists()
    assert AuditEntry.objects.filter(organization=org, action="membership.add").exists()


@pytest.mark.django_db
def test_an_api_key_of_the_invited_person_in_another_organization_accepts_too(
    org, other_org, outsider, invite, client_for
):
    _, token = invite(outsider.email)
    assert accept(client_for(outsider, other_org), token).status_code == 200
    assert Membership.objects.filter(organization=org, user=outsider).exists()


@pytest.mark.django_db
def test_another_persons_token_is_a_404_like_a_token_that_never_existed(
    org, outsider, member, invite
):
    _, token = invite(outsider.email)
    stranger = UserFactory(email="stranger@elsewhere.test")
    theirs = accept(signed_in(stranger), token)
    never = accept(signed_in(stranger), "x" * 43)
    assert theirs.status_code == never.status_code == 404
    assert theirs.json() == never.json()
    # A member of the inviting organization is not the invited person either.
    assert accept(signed_in(member), token).status_code == 404
    assert not Membership.objects.filter(organization=org, user=stranger).exists()


@pytest.mark.django_db
def test_accepting_needs_a_signed_in_person(invite, outsider):
    _, token = invite(outsider.email)
    assert accept(APIClient(), token).status_code == 401


@pytest.mark.django_db
def test_an_expired_invitation_is_refused(org, outsider, invite):
    _, token = invite(outsider.email)
    Invitation.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    response = accept(signed_in(outsider), token)
    assert response.status_code == 410
    assert "expired" in response.json()["detail"]
    assert not Membership.objects.filter(organization=org, user=outsider).exists()


@pytest.mark.django_db
def test_a_second_acceptance_is_a_409(org, outsider, invite):
    _, token = invite(outsider.email)
    client = signed_in(outsider)
    assert accept(client, token).status_code == 200
    again = accept(client, token)
    assert again.status_code == 409
    assert Membership.objects.filter(organization=org, user=outsider).count() == 1


@pytest.mark.django_db
def test_inviting_again_replaces_the_open_invitation(org, outsider, invite):
    _, old = invite(outsider.email)
    _, new = invite(outsider.email)
    client = signed_in(outsider)
    assert accept(client, old).status_code == 404
    assert accept(client, new).status_code == 200


@pytest.mark.django_db
def test_a_withdrawn_invitation_no_longer_works_and_withdrawing_twice_is_a_409(
    org, owner, outsider, invite, client_for
):
    _, token = invite(outsider.email)
    invitation = Invitation.objects.get()
    client = client_for(owner, org)
    assert client.post(f"/api/v1/invitations/{invitation.pk}/revoke/").status_code == 200
    assert client.post(f"/api/v1/invitations/{invitation.pk}/revoke/").status_code == 409
    assert accept(signed_in(outsider), token).status_code == 404
    assert AuditEntry.objects.filter(organization=org, action="invitation.revoke").count() == 1


@pytest.mark.django_db
def test_invitations_are_listed_to_managers_only_and_never_across_organizations(
    org, other_org, owner, member, outsider, invite, client_for
):
    invite("someone@initech.test")
    listed = client_for(owner, org).get("/api/v1/invitations/")
    assert listed.status_code == 200
    [row] = listed.json()["results"]
    assert row["email"] == "someone@initech.test" and row["status"] == "pending"
    assert "token" not in row and "token_hash" not in row
    assert client_for(member, org).get("/api/v1/invitations/").status_code == 403
    invitation = Invitation.objects.get()
    # Every field the schema declares is in the row (a fuzzer found this one missing).
    assert row["invited_by_user_id"] == invitation.invited_by_id is not None
    other = client_for(outsider, other_org)
    assert other.get(f"/api/v1/invitations/{invitation.pk}/").status_code == 404
    assert other.post(f"/api/v1/invitations/{invitation.pk}/revoke/").status_code == 404


@pytest.mark.django_db
def test_a_member_may_not_invite_and_an_admin_may_not_invite_an_owner(
    org, member, admin, client_for
):
    refused = client_for(member, org).post(
        "/api/v1/memberships/", {"email": "x@initech.test"}, format="json"
    )
    assert refused.status_code == 403
    owner_grant = client_for(admin, org).post(
        "/api/v1/memberships/", {"email": "x@initech.test", "role": "owner"}, format="json"
    )
    assert owner_grant.status_code == 403
    assert not Invitation.objects.exists()


# --- the console ------------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_members_page_invites_instead_of_adding(
    org, owner, outsider, django_capture_on_commit_callbacks
):
    client = Client()
    client.force_login(owner)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            "/settings/members/", {"email": outsider.email, "role": "member"}, follow=True
        )
    page = response.content.decode()
    assert "An invitation was sent to owner@globex.test" in page
    assert "Invitations waiting for an answer" in page and "Withdraw" in page
    assert not Membership.objects.filter(organization=org, user=outsider).exists()
    assert len(mail.outbox) == 1


@pytest.mark.django_db
def test_the_invited_person_accepts_on_the_link_page_signed_in(org, outsider, invite):
    _, token = invite(outsider.email)
    client = Client()
    client.force_login(outsider)
    page = client.get(f"/invitations/{token}/")
    assert page.status_code == 200 and "Accept and join" in page.content.decode()
    response = client.post(f"/invitations/{token}/")
    assert response.status_code == 302
    assert Membership.objects.filter(organization=org, user=outsider).exists()
    assert client.get(f"/invitations/{token}/").status_code == 409


@pytest.mark.django_db
def test_the_link_page_is_a_404_for_someone_else(org, outsider, invite):
    _, token = invite(outsider.email)
    stranger = UserFactory(email="stranger@elsewhere.test")
    client = Client()
    client.force_login(stranger)
    assert client.get(f"/invitations/{token}/").status_code == 404
    assert client.post(f"/invitations/{token}/").status_code == 404
    assert not Membership.objects.filter(organization=org, user=stranger).exists()


@pytest.mark.django_db
def test_a_new_address_chooses_a_password_on_the_link_page_and_joins(org, invite):
    _, token = invite("newcomer@initech.test", role="operator")
    client = Client()
    page = client.get(f"/invitations/{token}/").content.decode()
    assert "Create my account and join" in page
    differ = client.post(
        f"/invitations/{token}/",
        {"password": "a-long-passphrase-1", "password_again": "something-else-22"},
    )
    assert differ.status_code == 422 and not User.objects.filter(email="newcomer@initech.test")
    joined = client.post(
        f"/invitations/{token}/",
        {
            "full_name": "New Comer",
            "password": "a-long-passphrase-1",
            "password_again": "a-long-passphrase-1",
        },
    )
    assert joined.status_code == 302
    user = User.objects.get(email="newcomer@initech.test")
    assert user.full_name == "New Comer" and user.check_password("a-long-passphrase-1")
    assert Membership.objects.get(organization=org, user=user).role == Role.OPERATOR
    assert client.session["_auth_user_id"] == str(user.pk)


@pytest.mark.django_db
def test_an_existing_account_must_sign_in_not_choose_a_password(org, outsider, invite):
    _, token = invite(outsider.email)
    client = Client()
    page = client.get(f"/invitations/{token}/").content.decode()
    assert "Create my account" not in page and "Sign in as owner@globex.test" in page
    refused = client.post(
        f"/invitations/{token}/",
        {"password": "a-long-passphrase-1", "password_again": "a-long-passphrase-1"},
    )
    assert refused.status_code == 422
    assert outsider.__class__.objects.get(pk=outsider.pk).check_password(DEFAULT_PASSWORD)
    assert not Membership.objects.filter(organization=org, user=outsider).exists()


@pytest.mark.django_db
def test_an_expired_link_page_says_so(org, outsider, invite):
    _, token = invite(outsider.email)
    Invitation.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    client = Client()
    client.force_login(outsider)
    response = client.post(f"/invitations/{token}/")
    assert response.status_code == 410
    assert not Membership.objects.filter(organization=org, user=outsider).exists()
