"""Every orgs endpoint: no permission → 403, permission → success, another org's row → 404 with
the same body as an id that never existed."""

import pytest

from apps.orgs.models import ApiKey, Membership
from apps.orgs.services import api_key_create


def _membership(org, user):
    return Membership.objects.get(organization=org, user=user)


class TestOrganization:
    def test_member_reads_own_org(self, org, member, client_for):
        response = client_for(member, org).get(f"/api/v1/orgs/{org.pk}/")
        assert response.status_code == 200
        assert response.json()["monthly_budget_usd"] == "100.00"

    def test_other_org_is_a_404_like_a_missing_id(self, org, other_org, owner, client_for):
        client = client_for(owner, org)
        other = client.get(f"/api/v1/orgs/{other_org.pk}/")
        missing = client.get("/api/v1/orgs/999999/")
        assert other.status_code == missing.status_code == 404
        assert other.json() == missing.json()

    def test_owner_changes_budget(self, org, owner, client_for):
        response = client_for(owner, org).patch(
            f"/api/v1/orgs/{org.pk}/", {"monthly_budget_usd": "12.00"}, format="json"
        )
        assert response.status_code == 200, response.content
        assert response.json()["monthly_budget_usd"] == "12.00"

    def test_null_budget_means_no_cap(self, org, owner, client_for):
        response = client_for(owner, org).patch(
            f"/api/v1/orgs/{org.pk}/", {"monthly_budget_usd": None}, format="json"
        )
        assert response.json()["monthly_budget_usd"] is None

    def test_member_cannot_change_budget(self, org, member, client_for):
        response = client_for(member, org).patch(
            f"/api/v1/orgs/{org.pk}/", {"monthly_budget_usd": "1"}, format="json"
        )
        assert response.status_code == 403
        org.refresh_from_db()
        assert str(org.monthly_budget_usd) == "100.00"

    def test_patch_of_other_org_is_404(self, org, other_org, owner, client_for):
        response = client_for(owner, org).patch(
            f"/api/v1/orgs/{other_org.pk}/", {"name": "x"}, format="json"
        )
        assert response.status_code == 404

    def test_bad_value_is_422_naming_the_field(self, org, owner, client_for):
        response = client_for(owner, org).patch(
            f"/api/v1/orgs/{org.pk}/", {"monthly_budget_usd": "lots"}, format="json"
        )
        assert response.status_code == 422
        assert "monthly_budget_usd" in response.json()

    def test_unauthenticated_is_401(self, org, api_client):
        assert api_client.get(f"/api/v1/orgs/{org.pk}/").status_code == 401


class TestMemberships:
    def test_member_cannot_list(self, org, member, client_for):
        assert client_for(member, org).get("/api/v1/memberships/").status_code == 403

    def test_owner_lists_only_own_org(self, org, owner, member, outsider, client_for):
        response = client_for(owner, org).get("/api/v1/memberships/")
        assert response.status_code == 200
        emails = {row["email"] for row in response.json()["results"]}
        assert emails == {"owner@acme.test", "member@acme.test"}

    def test_owner_invites(self, org, owner, client_for):
        response = client_for(owner, org).post(
            "/api/v1/memberships/", {"email": "new@acme.test", "role": "builder"}, format="json"
        )
        # An invitation, not a membership: tests/orgs/test_invitations.py.
        assert response.status_code == 202
        assert response.json()["role"] == "builder"
        assert not Membership.objects.filter(user__email="new@acme.test").exists()

    def test_invite_with_unknown_role_is_422(self, org, owner, client_for):
        response = client_for(owner, org).post(
            "/api/v1/memberships/", {"email": "x@acme.test", "role": "god"}, format="json"
        )
        assert response.status_code == 422
        assert "role" in response.json()

    def test_member_cannot_invite(self, org, member, client_for):
        response = client_for(member, org).post(
            "/api/v1/memberships/", {"email": "x@acme.test"}, format="json"
        )
        assert response.status_code == 403

    def test_change_role_and_other_org_row(
        self, org, owner, member, outsider, other_org, client_for
    ):
        client = client_for(owner, org)
        ok = client.patch(
            f"/api/v1/memberships/{_membership(org, member).pk}/",
            {"role": "operator"},
            format="json",
        )
        assert ok.status_code == 200 and ok.json()["role"] == "operator"
        foreign = client.patch(
            f"/api/v1/memberships/{_membership(other_org, outsider).pk}/",
            {"role": "viewer"},
            format="json",
        )
        missing = client.patch("/api/v1/memberships/999999/", {"role": "viewer"}, format="json")
        assert foreign.status_code == missing.status_code == 404
        assert foreign.json() == missing.json()
        assert _membership(other_org, outsider).role == "owner"

    def test_member_cannot_change_roles(self, org, owner, member, client_for):
        response = client_for(member, org).patch(
            f"/api/v1/memberships/{_membership(org, owner).pk}/", {"role": "viewer"}, format="json"
        )
        assert response.status_code == 403

    def test_remove(self, org, owner, member, outsider, other_org, client_for):
        client = client_for(owner, org)
        assert (
            client.delete(f"/api/v1/memberships/{_membership(other_org, outsider).pk}/").status_code
            == 404
        )
        assert (
            client.delete(f"/api/v1/memberships/{_membership(org, member).pk}/").status_code == 204
        )
        assert not Membership.objects.filter(organization=org, user=member).exists()

    def test_member_cannot_remove(self, org, owner, member, client_for):
        assert (
            client_for(member, org)
            .delete(f"/api/v1/memberships/{_membership(org, owner).pk}/")
            .status_code
            == 403
        )


class TestApiKeys:
    def test_key_is_shown_once_and_stored_hashed(self, org, member, client_for):
        response = client_for(member, org).post(
            "/api/v1/api-keys/", {"name": "laptop"}, format="json"
        )
        assert response.status_code == 201
        raw_key = response.json()["key"]
        row = ApiKey.objects.get(pk=response.json()["id"])
        assert raw_key not in (row.key_hash, row.prefix) and row.key_hash != raw_key
        listing = client_for(member, org).get("/api/v1/api-keys/").json()["results"]
        assert all("key" not in item for item in listing)

    def test_key_acts_as_its_issuer(self, org, member, client_for):
        client = client_for(member, org)
        assert (
            client.get("/api/v1/memberships/").status_code == 403
        )  # a member's key, a member's reach

    def test_revoked_key_stops_working(self, org, member, api_client):
        api_key, raw_key = api_key_create(actor=None, organization=org, user=member, name="k")
        api_client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw_key}")
        assert api_client.get("/api/v1/orgs/").status_code == 200
        assert api_client.post(f"/api/v1/api-keys/{api_key.pk}/revoke/").status_code == 200
        assert api_client.get("/api/v1/orgs/").status_code == 401

    def test_last_used_at_is_stamped(self, org, member, api_client):
        api_key, raw_key = api_key_create(actor=None, organization=org, user=member, name="k")
        assert api_key.last_used_at is None
        api_client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw_key}")
        api_client.get("/api/v1/orgs/")
        api_key.refresh_from_db()
        assert api_key.last_used_at is not None

    def test_garbage_key_is_401(self, org, api_client):
        api_client.credentials(HTTP_AUTHORIZATION="Bearer aos_nope")
        assert api_client.get("/api/v1/orgs/").status_code == 401

    def test_key_stays_inside_its_organization(self, org, other_org, owner, client_for):
        from tests.factories import MembershipFactory

        MembershipFactory(organization=other_org, user=owner, role="owner")
        client = client_for(owner, org)
        # The header cannot move a key to another organization, even one its issuer belongs to.
        response = client.get(
            f"/api/v1/orgs/{other_org.pk}/", HTTP_X_ORGANIZATION_ID=str(other_org.pk)
        )
        assert response.status_code == 404

    def test_member_cannot_see_or_revoke_anothers_key(self, org, owner, member, client_for):
        owners_key, _ = api_key_create(actor=None, organization=org, user=owner, name="owner's")
        client = client_for(member, org)
        assert client.get(f"/api/v1/api-keys/{owners_key.pk}/").status_code == 404
        assert client.post(f"/api/v1/api-keys/{owners_key.pk}/revoke/").status_code == 404

    def test_owner_manages_every_key_but_not_another_orgs(
        self, org, other_org, owner, member, outsider, client_for
    ):
        members_key, _ = api_key_create(actor=None, organization=org, user=member, name="m")
        foreign_key, _ = api_key_create(actor=None, organization=other_org, user=outsider, name="o")
        client = client_for(owner, org)
        assert client.post(f"/api/v1/api-keys/{members_key.pk}/revoke/").status_code == 200
        assert client.post(f"/api/v1/api-keys/{foreign_key.pk}/revoke/").status_code == 404


class TestSessionOrganizationHeader:
    def test_header_selects_an_org_the_person_belongs_to(self, org, other_org, owner, api_client):
        from tests.factories import MembershipFactory

        MembershipFactory(organization=other_org, user=owner, role="viewer")
        api_client.force_login(owner)
        response = api_client.get(
            f"/api/v1/orgs/{other_org.pk}/", HTTP_X_ORGANIZATION_ID=str(other_org.pk)
        )
        assert response.status_code == 200
        assert response.json()["slug"] == "globex"

    def test_header_naming_a_foreign_org_is_404(self, org, other_org, owner, api_client):
        api_client.force_login(owner)
        response = api_client.get("/api/v1/orgs/", HTTP_X_ORGANIZATION_ID=str(other_org.pk))
        assert response.status_code == 404

    @pytest.mark.parametrize("value", ["abc", "1.5", ""])
    def test_header_outside_its_type_is_422(self, org, owner, api_client, value):
        api_client.force_login(owner)
        response = api_client.get("/api/v1/orgs/", HTTP_X_ORGANIZATION_ID=value)
        assert response.status_code == 422
        assert "X-Organization-Id" in response.json()
