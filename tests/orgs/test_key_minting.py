"""A key is minted by the person it acts as: nobody holds a credential that speaks as someone else.

Found by a prober (issue 13, defect 1): `POST /api/v1/api-keys/` took a `user_id`, so an admin
minted a key for the owner and, with it, made themselves owner — the rule "only an owner grants
the owner role" bypassed, and the audit entry naming the owner as the actor.
"""

import pytest
from django.core.exceptions import PermissionDenied

from apps.audit.models import AuditEntry
from apps.orgs.models import ApiKey, Membership
from apps.orgs.services import api_key_create
from tests.factories import MembershipFactory


def test_an_admin_cannot_mint_a_key_for_the_owner(org, owner, admin, client_for):
    response = client_for(admin, org).post(
        "/api/v1/api-keys/", {"name": "mine now", "user_id": owner.pk}, format="json"
    )
    assert response.status_code == 422
    assert "user_id" in response.json()
    assert not ApiKey.objects.filter(user=owner, name="mine now").exists()


def test_the_escalation_the_prober_walked_is_closed(org, owner, admin, client_for):
    """Mint as the owner, then promote oneself: the first step fails, so the second cannot run."""
    client = client_for(admin, org)
    minted = client.post("/api/v1/api-keys/", {"name": "x", "user_id": owner.pk}, format="json")
    assert "key" not in minted.json()
    admins_membership = Membership.objects.get(organization=org, user=admin)
    promoted = client.patch(
        f"/api/v1/memberships/{admins_membership.pk}/", {"role": "owner"}, format="json"
    )
    assert promoted.status_code == 403
    admins_membership.refresh_from_db()
    assert admins_membership.role == "admin"


def test_an_owner_of_another_org_cannot_mint_for_a_person_they_invited(
    org, other_org, member, outsider, client_for
):
    """Adding someone of Acme to Globex gives Globex's owner no credential speaking as them."""
    MembershipFactory(organization=other_org, user=member, role="member")
    response = client_for(outsider, other_org).post(
        "/api/v1/api-keys/", {"name": "theirs", "user_id": member.pk}, format="json"
    )
    assert response.status_code == 422
    assert not ApiKey.objects.filter(user=member).exists()


def test_naming_yourself_is_allowed_and_the_key_is_yours(org, admin, client_for):
    response = client_for(admin, org).post(
        "/api/v1/api-keys/", {"name": "laptop", "user_id": admin.pk}, format="json"
    )
    assert response.status_code == 201
    assert response.json()["user_id"] == admin.pk


def test_a_key_minted_by_its_person_is_audited_as_theirs(org, member, client_for):
    response = client_for(member, org).post("/api/v1/api-keys/", {"name": "ci"}, format="json")
    assert response.status_code == 201
    entry = AuditEntry.objects.get(action="api_key.create", subject_id=str(response.json()["id"]))
    assert entry.actor_id == member.pk
    assert entry.details["user_id"] == member.pk


def test_the_service_refuses_a_key_for_someone_else_whoever_asks(org, owner, admin, app_admin):
    for actor in (owner, admin, app_admin):
        with pytest.raises(PermissionDenied):
            api_key_create(
                actor=actor, organization=org, user=admin if actor != admin else owner, name="k"
            )
    assert not ApiKey.objects.exists()


def test_the_operators_shell_command_still_mints_and_is_audited_as_the_shell(org, member):
    api_key, raw_key = api_key_create(actor=None, organization=org, user=member, name="cli")
    assert raw_key.startswith("aos_")
    entry = AuditEntry.objects.get(action="api_key.create.shell", subject_id=str(api_key.pk))
    assert entry.actor_id is None
