"""Impersonation: at most an hour, both names on every entry, both ends recorded, and no
credential pinned to the account while it lasts."""

from datetime import timedelta

import pytest
from django.core.exceptions import PermissionDenied
from django.test import RequestFactory
from django.utils import timezone

from apps.audit.impersonation import (
    ACTION_ENDED,
    ACTION_STARTED,
    SESSION_KEY,
    impersonation_start,
    refuse_while_impersonating,
)
from apps.audit.models import AuditEntry, ImpersonationSession
from apps.orgs.choices import Role
from apps.orgs.models import ApiKey
from tests.factories import MembershipFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client(client, app_admin):
    client.force_login(app_admin)
    return client


def start(client, target, reason="customer asked for help"):
    response = client.post("/audit/impersonate/", {"email": target.email, "reason": reason})
    assert response.status_code == 302, response.content
    return ImpersonationSession.objects.get(target=target, ended_at__isnull=True)


def test_starting_records_who_whom_which_session_and_until_when(admin_client, app_admin, member):
    impersonation = start(admin_client, member)

    entry = AuditEntry.objects.get(action=ACTION_STARTED)
    assert (entry.actor_id, entry.impersonator_id, entry.organization_id) == (
        app_admin.pk,
        None,
        None,
    )
    assert (entry.subject_type, entry.subject_id) == ("orgs.User", str(member.pk))
    assert entry.details["impersonation_id"] == impersonation.pk
    assert entry.details["reason"] == "customer asked for help"
    assert impersonation.expires_at - impersonation.started_at == timedelta(hours=1)


def test_an_action_taken_while_impersonating_names_the_account_and_the_admin(
    admin_client, app_admin, member, org
):
    start(admin_client, member)

    response = admin_client.post(
        "/api/v1/api-keys/", {"name": "made while impersonating"}, content_type="application/json"
    )

    assert response.status_code == 201, response.content
    assert ApiKey.objects.get(name="made while impersonating").user == member
    entry = AuditEntry.objects.get(organization=org, subject_type="orgs.ApiKey")
    assert (entry.actor_id, entry.impersonator_id) == (member.pk, app_admin.pk)


def test_an_ordinary_request_has_no_impersonator(client, member, org):
    client.force_login(member)
    client.post("/api/v1/api-keys/", {"name": "mine"}, content_type="application/json")
    assert AuditEntry.objects.get(subject_type="orgs.ApiKey").impersonator_id is None


def test_stopping_records_the_end_with_the_admin_as_actor(admin_client, app_admin, member):
    impersonation = start(admin_client, member)

    admin_client.post("/audit/impersonate/stop/")

    entry = AuditEntry.objects.get(action=ACTION_ENDED)
    assert (entry.actor_id, entry.impersonator_id, entry.subject_id) == (
        app_admin.pk,
        None,
        str(member.pk),
    )
    assert entry.details["impersonation_id"] == impersonation.pk
    assert admin_client.session.get(SESSION_KEY) is None
    impersonation.refresh_from_db()
    assert impersonation.ended_at is not None


def test_expiry_ends_it_without_writing_anything(admin_client, app_admin, member, org):
    MembershipFactory(organization=org, user=app_admin, role=Role.ADMIN)
    impersonation = start(admin_client, member)
    ImpersonationSession.objects.filter(pk=impersonation.pk).update(
        expires_at=timezone.now() - timedelta(seconds=1)
    )
    entries_before = AuditEntry.objects.count()

    admin_client.post(
        "/api/v1/api-keys/", {"name": "after expiry"}, content_type="application/json"
    )

    assert ApiKey.objects.get(name="after expiry").user == app_admin
    assert AuditEntry.objects.filter(action=ACTION_ENDED).count() == 0
    assert AuditEntry.objects.exclude(subject_type="orgs.ApiKey").count() == entries_before
    assert AuditEntry.objects.get(subject_type="orgs.ApiKey").impersonator_id is None


def test_it_lasts_at_most_an_hour_whatever_is_asked(app_admin, member, rf):
    request = rf.get("/")
    request.session = {}
    impersonation = impersonation_start(
        admin=app_admin, target=member, session=request.session, duration=timedelta(hours=8)
    )
    assert impersonation.expires_at - impersonation.started_at == timedelta(hours=1)


def test_only_an_app_admin_may_impersonate(client, owner, member):
    client.force_login(owner)
    response = client.post("/audit/impersonate/", {"email": member.email})
    assert response.status_code == 403
    assert not ImpersonationSession.objects.exists()
    assert not AuditEntry.objects.filter(action=ACTION_STARTED).exists()


def test_another_app_admin_cannot_be_impersonated(admin_client):
    other_admin = UserFactory(email="second-root@agenticos.test", is_superuser=True)
    response = admin_client.post("/audit/impersonate/", {"email": other_admin.email})
    assert response.status_code == 200  # the form again, with the refusal
    assert b"cannot be impersonated" in response.content
    assert not ImpersonationSession.objects.exists()


@pytest.mark.parametrize("what", ["chat account link", "OAuth grant", "bearer token"])
def test_credentials_cannot_be_pinned_to_the_account_while_impersonating(
    admin_client, member, what
):
    """Each of the three credential endpoints calls refuse_while_impersonating; the stand-in view
    does exactly that, through the whole middleware stack."""
    start(admin_client, member)
    response = admin_client.post("/test-only/link-chat-account/", {"what": what})
    assert response.status_code == 403


def test_the_member_themselves_may_pin_credentials(client, member):
    client.force_login(member)
    assert client.post("/test-only/link-chat-account/").status_code == 200


def test_refusal_helper_raises_permission_denied_only_under_impersonation(app_admin, member):
    request = RequestFactory().post("/")
    request.impersonator = None
    refuse_while_impersonating(request)  # no impersonation: nothing happens
    request.impersonator = app_admin
    with pytest.raises(PermissionDenied):
        refuse_while_impersonating(request)
