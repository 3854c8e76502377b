from decimal import Decimal

import pytest
from django.core.exceptions import PermissionDenied, ValidationError

from apps.audit.models import AuditEntry
from apps.orgs.choices import Role
from apps.orgs.models import Membership, Organization, User
from apps.orgs.services import (
    bootstrap,
    invitation_create,
    membership_change_role,
    membership_remove,
    organization_create,
    organization_update,
)


class TestDefaultOrgBudget:
    def test_new_organization_gets_the_default_cap(self, db, settings, owner):
        settings.DEFAULT_ORG_MONTHLY_BUDGET_USD = Decimal("250")
        created = organization_create(actor=None, name="Initech", owner=owner)
        assert created.monthly_budget_usd == Decimal("250")

    def test_existing_organization_is_untouched_when_the_setting_changes(self, db, settings, owner):
        settings.DEFAULT_ORG_MONTHLY_BUDGET_USD = Decimal("100")
        created = organization_create(actor=None, name="Initech", owner=owner)
        settings.DEFAULT_ORG_MONTHLY_BUDGET_USD = Decimal("5")
        organization_create(actor=None, name="Hooli", owner=owner)
        created.refresh_from_db()
        assert created.monthly_budget_usd == Decimal("100")

    def test_empty_setting_means_uncapped(self, db, settings, owner):
        settings.DEFAULT_ORG_MONTHLY_BUDGET_USD = None
        assert (
            organization_create(actor=None, name="Initech", owner=owner).monthly_budget_usd is None
        )

    def test_empty_environment_value_reads_as_none(self, monkeypatch):
        from agenticos.settings.env import env_optional_decimal

        monkeypatch.setenv("DEFAULT_ORG_MONTHLY_BUDGET_USD", "")
        assert env_optional_decimal("DEFAULT_ORG_MONTHLY_BUDGET_USD", Decimal("100")) is None
        monkeypatch.delenv("DEFAULT_ORG_MONTHLY_BUDGET_USD")
        assert env_optional_decimal("DEFAULT_ORG_MONTHLY_BUDGET_USD", Decimal("100")) == Decimal(
            "100"
        )


class TestBudgetChange:
    def test_owner_changes_the_cap_and_it_is_audited(self, org, owner):
        organization_update(actor=owner, organization=org, monthly_budget_usd=Decimal("42.50"))
        org.refresh_from_db()
        assert org.monthly_budget_usd == Decimal("42.50")
        entry = AuditEntry.objects.get(organization=org, action="budget.change")
        assert entry.actor == owner
        assert entry.details["monthly_budget_usd"] == {"from": "100.00", "to": "42.50"}

    def test_member_is_refused(self, org, member):
        with pytest.raises(PermissionDenied):
            organization_update(actor=member, organization=org, monthly_budget_usd=Decimal("1"))
        org.refresh_from_db()
        assert org.monthly_budget_usd == Decimal("100")


class TestMemberships:
    def test_an_invitation_creates_no_account_and_no_membership(self, org, owner):
        invitation, token = invitation_create(
            actor=owner, organization=org, email="New@Acme.test", role=Role.BUILDER
        )
        assert invitation.email == "new@acme.test" and token
        assert not User.objects.filter(email__iexact="new@acme.test").exists()
        assert not Membership.objects.filter(organization=org, role=Role.BUILDER).exists()
        assert AuditEntry.objects.filter(action="invitation.create", organization=org).count() == 1

    def test_the_last_owner_cannot_leave_or_be_demoted(self, org, owner):
        membership = Membership.objects.get(organization=org, user=owner)
        with pytest.raises(ValidationError):
            membership_change_role(actor=owner, membership=membership, role=Role.ADMIN)
        with pytest.raises(ValidationError):
            membership_remove(actor=owner, membership=membership)

    def test_an_admin_cannot_make_an_owner(self, org, owner, admin, member):
        membership = Membership.objects.get(organization=org, user=member)
        with pytest.raises(PermissionDenied):
            membership_change_role(actor=admin, membership=membership, role=Role.OWNER)

    def test_removal_revokes_the_persons_keys(self, org, owner, member, client_for):
        client = client_for(member, org)
        membership_remove(
            actor=owner, membership=Membership.objects.get(organization=org, user=member)
        )
        assert client.get("/api/v1/orgs/").status_code == 401


class TestBootstrap:
    def test_is_idempotent(self, db):
        first = bootstrap(org_name="Default", admin_email="boss@example.com", admin_password=None)
        second = bootstrap(org_name="Default", admin_email="boss@example.com", admin_password=None)
        assert first[0].pk == second[0].pk
        assert first[0].slug == "default"
        assert first[2] is not None  # a password is generated and shown on the first boot
        assert second[2] is None  # ...and never again
        assert Organization.objects.count() == 1
        assert User.objects.count() == 1
        assert first[1].check_password(first[2])
        assert Membership.objects.get(user=first[1]).role == Role.OWNER

    def test_given_password_is_used(self, db):
        _, owner, generated = bootstrap(
            org_name="Acme Corp", admin_email="a@b.test", admin_password="s3cret-pass"
        )
        assert generated is None
        assert owner.check_password("s3cret-pass")
