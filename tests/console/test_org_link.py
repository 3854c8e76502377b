"""The console's org switcher and `org=` links."""

from apps.orgs.middleware import SESSION_KEY
from tests.factories import MembershipFactory


def test_org_link_switches_before_the_page_loads(client, org, other_org, owner):
    MembershipFactory(organization=other_org, user=owner, role="viewer")
    client.force_login(owner)
    response = client.get(f"/?org={other_org.pk}")
    assert response.status_code == 200
    assert response.context["organization"] == other_org  # the page's data is the linked org's
    assert client.session[SESSION_KEY] == other_org.pk


def test_person_who_left_is_told_the_link_is_why(client, org, other_org, owner):
    client.force_login(owner)
    response = client.get(f"/?org={other_org.pk}")
    assert response.context["organization"] == org
    text = " ".join(str(m) for m in response.context["messages"])
    assert "link you followed" in text and "not a member" in text


def test_switcher_refuses_an_org_the_person_is_not_in(client, org, other_org, owner):
    client.force_login(owner)
    response = client.post("/switch-org/", {"organization_id": other_org.pk})
    assert response.status_code == 404
    assert client.session.get(SESSION_KEY) in (None, org.pk)


def test_switcher_moves_to_another_membership(client, org, other_org, owner):
    MembershipFactory(organization=other_org, user=owner, role="member")
    client.force_login(owner)
    client.post("/switch-org/", {"organization_id": other_org.pk})
    assert client.get("/").context["organization"] == other_org


class TestSettingsPages:
    def test_member_sees_the_budget_but_cannot_change_it(self, client, org, member):
        client.force_login(member)
        page = client.get("/settings/organization/")
        assert page.context["form"].fields["monthly_budget_usd"].disabled
        client.post("/settings/organization/", {"name": "Hacked", "monthly_budget_usd": "1"})
        org.refresh_from_db()
        assert str(org.monthly_budget_usd) == "100.00" and org.name == "Acme"

    def test_owner_changes_the_budget(self, client, org, owner):
        client.force_login(owner)
        response = client.post(
            "/settings/organization/", {"name": "Acme", "monthly_budget_usd": "55"}, follow=True
        )
        org.refresh_from_db()
        assert str(org.monthly_budget_usd) == "55.00"
        assert "saved" in response.content.decode()

    def test_members_page_needs_members_manage(self, client, org, owner, member):
        client.force_login(member)
        assert client.get("/settings/members/").status_code == 403
        client.force_login(owner)
        assert client.get("/settings/members/").status_code == 200

    def test_owner_invites_changes_role_and_removes(
        self, client, org, owner, member, mailoutbox, django_capture_on_commit_callbacks
    ):
        from apps.orgs.models import Invitation, Membership

        client.force_login(owner)
        # The invitation e-mail goes out once the invitation commits.
        with django_capture_on_commit_callbacks(execute=True):
            client.post("/settings/members/", {"email": "fresh@acme.test", "role": "builder"})
        # Inviting makes no member: the invitee joins only by accepting (tests/orgs/test_invitations.py).
        invitation = Invitation.objects.get(organization=org, email="fresh@acme.test")
        assert invitation.role == "builder" and invitation.accepted_at is None
        assert not Membership.objects.filter(organization=org, user__email="fresh@acme.test")
        assert len(mailoutbox) == 1 and "fresh@acme.test" in mailoutbox[0].to
        membership = Membership.objects.get(organization=org, user=member)
        client.post(f"/settings/members/{membership.pk}/role/", {"role": "viewer"})
        membership.refresh_from_db()
        assert membership.role == "viewer"
        client.post(f"/settings/members/{membership.pk}/remove/")
        assert not Membership.objects.filter(pk=membership.pk).exists()

    def test_api_key_is_shown_once(self, client, org, member):
        client.force_login(member)
        first = client.post("/settings/api-keys/", {"name": "ci"})
        assert first.context["new_key"].startswith("aos_")
        assert client.get("/settings/api-keys/").context["new_key"] is None

    def test_anonymous_is_sent_to_login(self, client, db):
        response = client.get("/settings/organization/")
        assert response.status_code == 302 and response.url.startswith("/login/")
