"""GET /api/v1/audit/: audit:read, the caller's organization only, filters, no ip_address."""

from datetime import timedelta

import pytest
from django.utils import timezone

from apps.audit.context import current_ip_address
from apps.audit.selectors import AUDIT_READ_FIELDS
from apps.audit.services import record_audit

pytestmark = pytest.mark.django_db


@pytest.fixture
def trail(org, other_org, owner, admin, outsider):
    token = current_ip_address.set("203.0.113.9")
    try:
        return {
            "renamed": record_audit(
                actor=owner, organization=org, action="org.renamed", subject=org
            ),
            "budget": record_audit(
                actor=admin,
                organization=org,
                action="org.budget_changed",
                subject=org,
                details={"from": "100.00", "to": "50.00"},
            ),
            "neighbour": record_audit(
                actor=outsider, organization=other_org, action="org.renamed", subject=other_org
            ),
        }
    finally:
        current_ip_address.reset(token)


def test_a_member_without_audit_read_is_refused(client_for, org, member, trail):
    assert client_for(member, org).get("/api/v1/audit/").status_code == 403


def test_audit_read_lists_this_organization_only_newest_first(client_for, org, owner, trail):
    response = client_for(owner, org).get("/api/v1/audit/")

    assert response.status_code == 200
    # (The API key the client authenticates with was audited too: api_key.* rows.)
    rows = [row for row in response.json()["results"] if row["action"].startswith("org.")]
    assert [row["id"] for row in rows] == [trail["budget"].pk, trail["renamed"].pk]
    assert tuple(rows[0]) == AUDIT_READ_FIELDS
    assert "ip_address" not in rows[0]
    assert rows[0]["details"] == {"from": "100.00", "to": "50.00"}
    assert rows[0]["actor_email"] == "admin@acme.test"


def test_another_organizations_entry_reads_as_missing(client_for, org, owner, trail):
    client = client_for(owner, org)
    missing = client.get("/api/v1/audit/999999/")
    neighbours = client.get(f"/api/v1/audit/{trail['neighbour'].pk}/")
    assert neighbours.status_code == 404
    assert neighbours.json() == missing.json()
    assert client.get(f"/api/v1/audit/{trail['renamed'].pk}/").status_code == 200


def test_filters_on_action_actor_and_window(client_for, org, owner, admin, trail):
    client = client_for(owner, org)

    by_action = client.get("/api/v1/audit/", {"action": "org.renamed"}).json()["results"]
    by_actor = client.get("/api/v1/audit/", {"actor_user_id": admin.pk}).json()["results"]
    today = timezone.now().date()
    in_window = client.get(
        "/api/v1/audit/", {"created_from": today.isoformat(), "created_to": today.isoformat()}
    )
    before = client.get("/api/v1/audit/", {"created_to": (today - timedelta(days=1)).isoformat()})

    assert [row["id"] for row in by_action] == [trail["renamed"].pk]
    assert [row["id"] for row in by_actor] == [trail["budget"].pk]
    # The API key created for the client is audited too, so count what this test wrote.
    assert {trail["renamed"].pk, trail["budget"].pk} <= {
        row["id"] for row in in_window.json()["results"]
    }
    assert before.json()["results"] == []


@pytest.mark.parametrize(
    "params, field",
    [
        ({"actor_user_id": "me"}, "actor_user_id"),
        ({"created_from": "yesterday"}, "created_from"),
        ({"created_from": "2025-02-01", "created_to": "2025-01-01"}, "created_to"),
    ],
)
def test_a_value_outside_its_type_is_a_422_not_an_empty_page(client_for, org, owner, params, field):
    response = client_for(owner, org).get("/api/v1/audit/", params)
    assert response.status_code == 422
    assert field in response.json()


def test_an_app_admin_reads_the_trail_and_their_reads_are_not_special(
    client, app_admin, org, trail
):
    client.force_login(app_admin)
    response = client.get("/api/v1/audit/", HTTP_X_ORGANIZATION_ID=str(org.pk))
    assert response.status_code == 200
    assert {row["organization_id"] for row in response.json()["results"]} == {org.pk}


def test_the_console_page_shows_the_trail_to_audit_read_only(client, org, owner, member, trail):
    client.force_login(owner)
    page = client.get("/audit/")
    assert page.status_code == 200
    assert b"org.budget_changed" in page.content and b"Globex" not in page.content
    client.force_login(member)
    assert client.get("/audit/").status_code == 403
