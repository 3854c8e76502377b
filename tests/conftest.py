"""The fixed cast every test can use (STYLE.md: tests read like specifications).

`org` is Acme with an owner, admin, operator, builder, member and viewer; `other_org` is a
neighbour whose owner is the `outsider`; `app_admin` is a deployment superuser in neither.
"""

import os

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


@pytest.fixture(autouse=True)
def no_real_model_requests():
    """No test reaches a real model provider; the offline model (a FunctionModel) is unaffected."""
    from pydantic_ai import models

    previous = models.ALLOW_MODEL_REQUESTS
    models.ALLOW_MODEL_REQUESTS = False
    yield
    models.ALLOW_MODEL_REQUESTS = previous


@pytest.fixture
def allow_local_model_requests(no_real_model_requests):
    """For tests against the OpenAI-compatible server they start on 127.0.0.1."""
    from pydantic_ai import models

    models.ALLOW_MODEL_REQUESTS = True
    yield


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


CHROMIUM = "/usr/bin/chromium"
# Debian's Chromium, headless, as root, on a machine with no outside network: without the
# background-networking flags it keeps dialling out and being refused.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@pytest.fixture
def page(monkeypatch):
    """A page in a real headless Chromium (tests marked `browser`)."""
    from playwright.sync_api import sync_playwright

    if not os.path.exists(CHROMIUM):
        pytest.fail(
            f"{CHROMIUM} is missing: `apt-get install -y chromium` (make test and .ci/run do it)"
        )
    # Playwright's sync API runs an event loop in this thread; the test's own ORM calls are
    # ordinary synchronous setup, not code inside that loop. Only for this test.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    from playwright.sync_api import expect

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        # The Content-Security-Policy is enforced in every browser test (no bypass_csp): the
        # console must work under it, so a test waits with locators, never with eval'd strings.
        context = browser.new_context()
        context.set_default_timeout(20_000)
        expect.set_options(timeout=20_000)
        page = context.new_page()
        violations: list[str] = []
        page.on(
            "console",
            lambda message: (
                violations.append(message.text)
                if "Content Security Policy" in message.text
                else None
            ),
        )
        yield page
        browser.close()
        assert not violations, f"the page broke its Content-Security-Policy: {violations}"


@pytest.fixture
def as_if_built():
    """Make capabilities count as built for one test (a builder that offers nothing), so the
    declaration side — manifest rows, renames, approvals — can be checked before a capability's
    tools exist. Restores the real table afterwards."""
    from apps.capabilities.implementations import (
        register_toolset,
        toolset_builder,
        unregister_toolset,
    )

    replaced: dict[str, object] = {}

    def mark(*capability_ids: str) -> None:
        for capability_id in capability_ids:
            replaced.setdefault(capability_id, toolset_builder(capability_id))
            if replaced[capability_id] is None:
                register_toolset(capability_id, lambda binding, context: None)

    yield mark
    for capability_id, previous in replaced.items():
        if previous is None:
            unregister_toolset(capability_id)


SMALL_EXPORT_ROW_LIMIT = 10


@pytest.fixture
def small_export_row_limit(monkeypatch):
    """Every export's row limit lowered to ten for one test: "more than the limit is refused with
    the count" is the same rule at 11 rows as at 10,001, without writing ten thousand rows first.
    (tests/audit/test_exports.py checks the real limit is 10,000.)"""
    from apps.audit import exports

    monkeypatch.setattr(exports, "EXPORT_ROW_LIMIT", SMALL_EXPORT_ROW_LIMIT)
    return SMALL_EXPORT_ROW_LIMIT
