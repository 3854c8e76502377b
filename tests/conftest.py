"""The fixed cast every test can use (STYLE.md: tests read like specifications).

`org` is Acme with an owner, admin, operator, builder, member and viewer; `other_org` is a
neighbour whose owner is the `outsider`; `app_admin` is a deployment superuser in neither.
"""

import pytest
from rest_framework.test import APIClient

from apps.orgs.choices import Role
from apps.orgs.services import api_key_create

from .factories import OrganizationFactory, UserFactory, member_of


@pytest.fixture
def org(db):
    return OrganizationFactory(name="Acme", slug="acme")


@pytest.fixture
def other_org(db):
    return OrganizationFactory(name="Globex", slug="globex")


@pytest.fixture
def owner(org):
    return member_of(org, Role.OWNER, "owner@acme.test")


@pytest.fixture
def admin(org):
    return member_of(org, Role.ADMIN, "admin@acme.test")


@pytest.fixture
def operator(org):
    return member_of(org, Role.OPERATOR, "operator@acme.test")


@pytest.fixture
def builder(org):
    return member_of(org, Role.BUILDER, "builder@acme.test")


@pytest.fixture
def member(org):
    return member_of(org, Role.MEMBER, "member@acme.test")


@pytest.fixture
def viewer(org):
    return member_of(org, Role.VIEWER, "viewer@acme.test")


@pytest.fixture
def outsider(other_org):
    return member_of(other_org, Role.OWNER, "owner@globex.test")


@pytest.fixture
def app_admin(db):
    return UserFactory(email="root@agenticos.test", is_superuser=True, is_staff=True)


@pytest.fixture
def api_client():
    return APIClient()


@pytest.fixture
def client_for():
    """An API client authenticated with a fresh API key of `user` in `organization`."""

    def make(user, organization):
        _, raw_key = api_key_create(actor=None, organization=organization, user=user, name="test")
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw_key}")
        return client

    return make


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker):
    """The test database, with stray connections closed before it is dropped: a thread of a
    concurrency test or the live server may still hold one, and PostgreSQL refuses to drop a
    database in use (the suite would leave one behind per run)."""
    yield
    with django_db_blocker.unblock():
        from django.db import connection

        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
