"""record_audit: what an entry holds, what it refuses, and that it fails closed."""

from decimal import Decimal

import pytest
from django.contrib.auth.models import AnonymousUser
from django.db import DatabaseError, connection, transaction

from apps.audit.chain import GENESIS_HASH, entry_hash
from apps.audit.context import current_impersonator
from apps.audit.models import AuditEntry
from apps.audit.services import record_audit
from apps.orgs.models import Membership, Organization

pytestmark = pytest.mark.django_db


def test_entry_names_actor_subject_and_links_to_the_previous_one(org, owner):
    first = record_audit(
        actor=owner, organization=org, action="org.renamed", subject=org, details={"to": "Acme"}
    )
    second = record_audit(
        actor=owner,
        organization=org,
        action="org.budget_changed",
        subject=org,
        details={"to": Decimal("12.50")},
    )

    assert (first.chain, first.sequence, first.prev_hash) == (f"org:{org.pk}", 1, GENESIS_HASH)
    assert (second.sequence, second.prev_hash) == (2, first.entry_hash)
    assert (second.actor_id, second.actor_label, second.impersonator_id) == (
        owner.pk,
        owner.email,
        None,
    )
    assert (second.subject_type, second.subject_id, second.subject_label) == (
        "orgs.Organization",
        str(org.pk),
        "Acme",
    )
    stored = AuditEntry.objects.values().get(pk=second.pk)
    assert stored["details"] == {"to": "12.50"}
    assert entry_hash({**stored, "actor_id": stored["actor_id"]}) == second.entry_hash


def test_each_organization_and_the_deployment_have_their_own_chain(org, other_org, owner, outsider):
    ours = record_audit(actor=owner, organization=org, action="a", subject=org)
    theirs = record_audit(actor=outsider, organization=other_org, action="a", subject=other_org)
    deployment = record_audit(
        actor=None,
        organization=None,
        action="operator.shell.create_org",
        subject=("shell", "1", "x"),
    )

    assert [ours.sequence, theirs.sequence, deployment.sequence] == [1, 1, 1]
    assert deployment.chain == "deployment" and deployment.actor_id is None


def test_a_subject_tuple_is_stored_as_kind_id_label(org, owner):
    entry = record_audit(
        actor=owner,
        organization=org,
        action="secret.set",
        subject=("agents.Secret", 7, "OPENAI key"),
    )
    assert (entry.subject_type, entry.subject_id, entry.subject_label) == (
        "agents.Secret",
        "7",
        "OPENAI key",
    )


def test_a_missing_subject_raises_instead_of_writing_an_anonymous_entry(org, owner):
    with pytest.raises(ValueError, match="subject"):
        record_audit(actor=owner, organization=org, action="org.renamed", subject=None)
    assert not AuditEntry.objects.exists()


def test_an_anonymous_user_is_refused_as_actor_rather_than_blanked(org):
    with pytest.raises(ValueError, match="actor"):
        record_audit(actor=AnonymousUser(), organization=org, action="org.renamed", subject=org)


def test_the_impersonator_in_force_is_added_without_the_caller_passing_it(org, member, app_admin):
    token = current_impersonator.set(app_admin)
    try:
        entry = record_audit(actor=member, organization=org, action="api_key.created", subject=org)
    finally:
        current_impersonator.reset(token)
    assert (entry.actor_id, entry.impersonator_id) == (member.pk, app_admin.pk)


def test_entries_cannot_be_updated_or_deleted_through_the_application(org, owner):
    entry = record_audit(actor=owner, organization=org, action="org.renamed", subject=org)
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
        AuditEntry.objects.filter(pk=entry.pk).update(action="nothing.happened")
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
        AuditEntry.objects.filter(pk=entry.pk).delete()


def test_an_action_whose_entry_cannot_be_written_rolls_back(org, owner):
    """Fail closed: the organization created in the same transaction disappears with the entry."""
    with pytest.raises(DatabaseError), transaction.atomic():
        created = Organization.objects.create(name="Initech", slug="initech")
        # PostgreSQL refuses a NUL character in JSONB: the entry cannot be stored.
        record_audit(
            actor=owner,
            organization=created,
            action="org.created",
            subject=created,
            details={"note": "\x00"},
        )
    assert not Organization.objects.filter(slug="initech").exists()
    assert not AuditEntry.objects.exists()


def test_a_privileged_api_write_is_refused_when_the_trail_cannot_be_written(org, owner, client_for):
    """The real path: POST /memberships/ calls record_audit; an audit table that refuses inserts
    (here a trigger, as a full disk or a revoked grant would) turns the request into an error and
    leaves no membership behind."""
    client = client_for(owner, org)
    with connection.cursor() as cursor:
        cursor.execute(
            """
            CREATE FUNCTION test_refuse_audit_insert() RETURNS trigger AS $$
            BEGIN RAISE EXCEPTION 'audit storage unavailable'; END; $$ LANGUAGE plpgsql;
            CREATE TRIGGER test_refuse_audit_insert BEFORE INSERT ON audit_auditentry
                FOR EACH ROW EXECUTE FUNCTION test_refuse_audit_insert();
            """
        )
    client.raise_request_exception = False
    response = client.post(
        "/api/v1/memberships/", {"email": "new@acme.test", "role": "member"}, format="json"
    )

    assert response.status_code == 500
    assert not Membership.objects.filter(user__email="new@acme.test").exists()
