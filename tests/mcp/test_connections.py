"""MCP connections: the API, the vault, the audit trail, the address checks, impersonation and
tenancy — against a real MCP server on 127.0.0.1."""

from __future__ import annotations

import logging

import pytest

from apps.audit.models import AuditEntry
from apps.mcp.models import McpConnection
from apps.vault.models import Secret
from apps.vault.services import secret_reveal
from tests.runs.factories import published_agent

from .conftest import TOKEN

pytestmark = pytest.mark.django_db

URL = "/api/v1/mcp/connections/"


def _create(client, warehouse, **fields):
    body = {"name": "Warehouse", "url": warehouse.http_url, "token": TOKEN, **fields}
    return client.post(URL, body, format="json")


def test_an_admin_adds_a_connection_its_token_sealed_and_audited_without_it(
    org, owner, client_for, warehouse, mcp_allowed, caplog
):
    client = client_for(owner, org)
    with caplog.at_level(logging.DEBUG):
        created = _create(client, warehouse)
    assert created.status_code == 201, created.content
    body = created.json()
    assert body["scope"] == "organization" and body["prefix"] == "warehouse"
    assert body["has_token"] is True and body["tools"] == [] and body["tools_listed_at"] is None
    assert TOKEN not in created.content.decode() and TOKEN not in caplog.text

    connection = McpConnection.objects.get(pk=body["id"])
    assert connection.token_secret.purpose == "mcp"
    assert secret_reveal(connection.token_secret) == TOKEN
    assert TOKEN.encode() not in bytes(connection.token_secret.ciphertext)
    entry = AuditEntry.objects.get(action="mcp.connection.create")
    assert entry.actor_id == owner.pk and entry.details["token"] == "set"
    assert TOKEN not in str(list(AuditEntry.objects.values_list("details", flat=True)))
    # The token is its connection's: not a key anyone can pick on the Keys page or the API.
    assert client.get("/api/v1/secrets/").json()["results"] == []


def test_listing_tools_fixes_them_on_the_connection_with_the_time(
    org, owner, client_for, warehouse, mcp_allowed
):
    client = client_for(owner, org)
    connection_id = _create(client, warehouse).json()["id"]

    tested = client.post(f"{URL}{connection_id}/test/")
    assert tested.json()["ok"] is True
    assert {t["name"] for t in tested.json()["tools"]} == {
        "add",
        "explode",
        "slow_report",
        "stock_count",
    }
    assert McpConnection.objects.get(pk=connection_id).tools == []  # a test changes nothing

    listed = client.post(f"{URL}{connection_id}/tools/")
    assert listed.status_code == 200
    assert listed.json()["tool_count"] == 4 and listed.json()["tools_listed_at"]
    add = next(t for t in listed.json()["tools"] if t["name"] == "add")
    assert add["input_schema"]["required"] == ["a", "b"]
    entry = AuditEntry.objects.get(action="mcp.connection.tools_listed")
    assert entry.details["tool_count"] == 4 and len(entry.details["added"]) == 4


def test_a_wrong_token_is_reported_not_stored(org, owner, client_for, warehouse, mcp_allowed):
    client = client_for(owner, org)
    connection_id = _create(client, warehouse, token="not-the-token").json()["id"]

    tested = client.post(f"{URL}{connection_id}/test/").json()
    assert tested["ok"] is False and "Warehouse" in tested["error"]
    listed = client.post(f"{URL}{connection_id}/tools/")
    assert listed.status_code == 502 and "Could not reach “Warehouse”" in listed.json()["detail"]
    assert McpConnection.objects.get(pk=connection_id).tools_listed_at is None


def test_rotating_and_clearing_the_token_leave_a_trail(
    org, owner, client_for, warehouse, mcp_allowed
):
    client = client_for(owner, org)
    connection_id = _create(client, warehouse).json()["id"]

    rotated = client.patch(
        f"{URL}{connection_id}/", {"token": "rotated-token-99999"}, format="json"
    )
    assert rotated.status_code == 200 and rotated.json()["token_hint"] == "9999"
    connection = McpConnection.objects.get(pk=connection_id)
    assert secret_reveal(connection.token_secret) == "rotated-token-99999"
    update = AuditEntry.objects.filter(action="mcp.connection.update").latest("sequence")
    assert update.details["token"] == "rotated"
    assert "rotated-token-99999" not in str(update.details)

    cleared = client.patch(f"{URL}{connection_id}/", {"clear_token": True}, format="json")
    assert cleared.json()["has_token"] is False
    assert not Secret.objects.filter(purpose="mcp").exists()
    update = AuditEntry.objects.filter(action="mcp.connection.update").latest("sequence")
    assert update.details["token"] == "cleared"


def test_deleting_a_connection_is_audited_and_takes_its_token(
    org, owner, client_for, warehouse, mcp_allowed
):
    client = client_for(owner, org)
    connection_id = _create(client, warehouse).json()["id"]

    assert client.delete(f"{URL}{connection_id}/").status_code == 204
    assert not McpConnection.objects.exists() and not Secret.objects.exists()
    entry = AuditEntry.objects.get(action="mcp.connection.delete")
    assert entry.details["name"] == "Warehouse" and entry.actor_id == owner.pk


@pytest.mark.parametrize(
    "url, refused",
    [
        ("http://127.0.0.1:8123/mcp", "loopback"),
        ("http://10.1.2.3/mcp", "private"),
        ("http://169.254.169.254/latest/mcp", "cloud metadata"),
        ("http://[::1]:8123/mcp", "loopback"),
        ("ftp://example.com/mcp", "http:// or https://"),
        ("http://[::1/mcp", "not a valid"),
        ("https://user:secret@example.com/mcp", "no user name or password"),
        ("http://example.com:99999/mcp", "not a valid"),
    ],
)
def test_the_address_checks_refuse_internal_urls_naming_the_field(
    org, owner, client_for, url, refused, settings
):
    settings.OUTBOUND_ALLOW = []
    answer = client_for(owner, org).post(URL, {"name": "Inside", "url": url}, format="json")
    assert answer.status_code == 422
    assert refused in answer.json()["url"][0]
    assert not McpConnection.objects.exists()


def test_an_allow_listed_host_is_dialled_but_a_metadata_address_never(
    org, owner, client_for, settings
):
    settings.OUTBOUND_ALLOW = ["127.0.0.1", "169.254.169.254"]
    client = client_for(owner, org)
    allowed = client.post(URL, {"name": "Local", "url": "http://127.0.0.1:8123/mcp"}, format="json")
    assert allowed.status_code == 201
    metadata = client.post(
        URL, {"name": "Meta", "url": "http://169.254.169.254/mcp"}, format="json"
    )
    assert metadata.status_code == 422 and "cloud metadata" in metadata.json()["url"][0]


def test_a_changed_url_is_checked_again(org, owner, client_for, warehouse, mcp_allowed, settings):
    client = client_for(owner, org)
    connection_id = _create(client, warehouse).json()["id"]
    changed = client.patch(f"{URL}{connection_id}/", {"url": "http://10.0.0.5/mcp"}, format="json")
    assert changed.status_code == 422 and "private" in changed.json()["url"][0]


def test_typing_a_token_while_impersonating_is_refused(
    client, app_admin, owner, org, warehouse, mcp_allowed
):
    client.force_login(app_admin)
    client.post("/audit/impersonate/", {"email": owner.email, "reason": "support ticket"})
    refused = client.post(
        URL,
        {"name": "Warehouse", "url": warehouse.http_url, "token": TOKEN},
        content_type="application/json",
    )
    assert refused.status_code == 403
    assert not McpConnection.objects.exists() and not Secret.objects.exists()

    # Configuration without a secret is still theirs to help with…
    created = client.post(
        URL, {"name": "Warehouse", "url": warehouse.http_url}, content_type="application/json"
    )
    assert created.status_code == 201
    entry = AuditEntry.objects.get(action="mcp.connection.create")
    assert entry.actor_id == owner.pk and entry.impersonator_id == app_admin.pk
    # …but a token typed into an existing connection is refused too.
    rotated = client.patch(
        f"{URL}{created.json()['id']}/", {"token": TOKEN}, content_type="application/json"
    )
    assert rotated.status_code == 403
    assert McpConnection.objects.get().token_secret is None


def test_a_personal_connection_is_its_owners_alone(
    org, owner, member, builder, client_for, warehouse, mcp_allowed
):
    mine = _create(client_for(member, org), warehouse, name="My CRM", scope="personal")
    assert mine.status_code == 201 and mine.json()["scope"] == "personal"
    assert mine.json()["owner_id"] == member.pk

    # Invisible to everyone else, the organization's owner included: its token speaks as them.
    for other in (owner, builder):
        client = client_for(other, org)
        assert [c["id"] for c in client.get(URL).json()["results"]] == []
        assert client.get(f"{URL}{mine.json()['id']}/").status_code == 404
        assert client.delete(f"{URL}{mine.json()['id']}/").status_code == 404
    assert client_for(member, org).get(URL).json()["count"] == 1


def test_permission_triplet(org, other_org, owner, member, viewer, outsider, client_for, settings):
    settings.OUTBOUND_ALLOW = ["127.0.0.1"]
    body = {"name": "Shared", "url": "http://127.0.0.1:8123/mcp"}
    # Without the permission: a member may not add the organization's connection…
    refused = client_for(member, org).post(URL, body, format="json")
    assert refused.status_code == 403
    # …nor may a viewer keep a personal one (they run no agents).
    assert (
        client_for(viewer, org).post(URL, {**body, "scope": "personal"}, format="json").status_code
        == 403
    )
    # With it: the owner adds it and every member reads it.
    created = client_for(owner, org).post(URL, body, format="json")
    assert created.status_code == 201
    connection_id = created.json()["id"]
    assert client_for(member, org).get(f"{URL}{connection_id}/").status_code == 200
    assert (
        client_for(member, org)
        .patch(f"{URL}{connection_id}/", {"name": "Mine now"}, format="json")
        .status_code
        == 403
    )
    # Another organization: a 404, for reads and writes alike.
    theirs = client_for(outsider, other_org)
    assert theirs.get(f"{URL}{connection_id}/").status_code == 404
    assert theirs.post(f"{URL}{connection_id}/tools/").status_code == 404
    assert theirs.delete(f"{URL}{connection_id}/").status_code == 404
    assert theirs.get(URL).json()["count"] == 0


@pytest.mark.parametrize(
    "body, field",
    [
        ({"url": "http://127.0.0.1:8123/mcp"}, "name"),
        ({"name": "X"}, "url"),
        ({"name": "X", "url": "http://127.0.0.1:8123/mcp", "transport": "stdio"}, "transport"),
        ({"name": "X", "url": "http://127.0.0.1:8123/mcp", "scope": "team"}, "scope"),
        ({"name": "X", "url": "http://127.0.0.1:8123/mcp", "prefix": "9bad prefix"}, "prefix"),
        ({"name": 5, "url": "http://127.0.0.1:8123/mcp"}, "name"),
    ],
)
def test_bad_input_is_a_422_naming_the_field(org, owner, client_for, settings, body, field):
    settings.OUTBOUND_ALLOW = ["127.0.0.1"]
    answer = client_for(owner, org).post(URL, body, format="json")
    assert answer.status_code == 422 and field in answer.json()


def test_two_connections_with_one_name_are_refused(org, owner, client_for, settings):
    settings.OUTBOUND_ALLOW = ["127.0.0.1"]
    client = client_for(owner, org)
    body = {"name": "Shared", "url": "http://127.0.0.1:8123/mcp"}
    assert client.post(URL, body, format="json").status_code == 201
    again = client.post(URL, body, format="json")
    assert again.status_code == 422 and "name" in again.json()


# --- binding at publish --------------------------------------------------------------------


def _publish(client, connection_id, **binding):
    agent = client.post(
        "/api/v1/agents/",
        {"name": "Stocker", "spec": {"mcp_connections": [{"id": connection_id, **binding}]}},
        format="json",
    )
    assert agent.status_code == 201, agent.content
    return client.post(f"/api/v1/agents/{agent.json()['id']}/publish/")


def test_publishing_another_organizations_connection_is_refused(
    org, other_org, owner, outsider, client_for, warehouse, listed_connection
):
    theirs = listed_connection(outsider, other_org, warehouse.http_url)
    answer = _publish(client_for(owner, org), theirs.pk)
    assert answer.status_code == 422
    error = answer.json()["errors"][0]
    assert error["field"] == "mcp_connections[0].id"
    assert "no MCP connection" in error["message"]


def test_publishing_another_members_personal_connection_is_refused(
    org, owner, member, client_for, warehouse, listed_connection
):
    personal = listed_connection(
        member, org, warehouse.http_url, name="Ana's CRM", scope="personal"
    )
    answer = _publish(client_for(owner, org), personal.pk)
    assert answer.status_code == 422
    assert "personal connection of another member" in answer.json()["errors"][0]["message"]


def test_an_unlisted_connection_or_an_unknown_rename_is_refused(
    org, owner, client_for, warehouse, mcp_allowed, listed_connection
):
    client = client_for(owner, org)
    unlisted = _create(client, warehouse, name="Unlisted").json()["id"]
    answer = _publish(client, unlisted)
    assert "never listed" in answer.json()["errors"][0]["message"]

    listed = listed_connection(owner, org, warehouse.http_url, prefix="wh")
    answer = _publish(client, listed.pk, tool_overrides={"teleport": {"name": "beam"}})
    assert answer.json()["errors"][0]["field"] == "mcp_connections[0].tool_overrides.teleport"


def test_a_rename_colliding_with_a_registry_tool_is_refused(
    org, owner, warehouse, listed_connection
):
    from apps.agents.validation import validate_spec

    listed = listed_connection(owner, org, warehouse.http_url, prefix="wh")
    spec = {
        "capabilities": [{"id": "planning"}],
        "mcp_connections": [{"id": listed.pk, "tool_overrides": {"add": {"name": "add_task"}}}],
    }
    errors = validate_spec(spec, organization=org, actor=owner)
    assert [e.field for e in errors] == ["mcp_connections[0].tool_overrides.add.name"]
    assert "two tools named 'add_task'" in errors[0].message


def test_every_request_is_checked_again_when_it_is_made(
    org, owner, warehouse, settings, client_for
):
    """The host is resolved, judged and pinned on each request, not only when the URL was saved:
    once the operator takes the host off the list, the same connection is refused."""
    settings.OUTBOUND_ALLOW = ["localhost"]
    client = client_for(owner, org)
    url = warehouse.http_url.replace("127.0.0.1", "localhost")
    connection_id = _create(client, warehouse, url=url).json()["id"]
    listed = client.post(f"{URL}{connection_id}/tools/")
    assert listed.status_code == 200 and listed.json()["tool_count"] == 4

    settings.OUTBOUND_ALLOW = []
    refused = client.post(f"{URL}{connection_id}/test/").json()
    assert refused["ok"] is False
    assert "localhost leads to a private, loopback or link-local address" in refused["error"]


def test_the_mcp_app_imports_nothing_above_it():
    """apps.mcp sits beside the vault (STYLE.md): agents and runs read it, never the reverse."""
    import ast
    from pathlib import Path

    import apps.mcp

    root = Path(apps.mcp.__file__).parent
    above = ("apps.agents", "apps.runs", "apps.approvals", "apps.console", "apps.memory")
    upward = {
        f"{path.relative_to(root)}: {node.module}"
        for path in root.rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(above)
    }
    assert upward == set()


def test_the_tool_manifest_lists_the_bound_connections_tools(
    org, owner, client_for, warehouse, listed_connection
):
    listed = listed_connection(owner, org, warehouse.http_url, prefix="wh")
    agent = published_agent(
        org,
        created_by=owner,
        capabilities=[{"id": "planning"}],
        mcp_connections=[{"id": listed.pk, "tool_overrides": {"add": {"name": "plus"}}}],
    )
    manifest = client_for(owner, org).get(f"/api/v1/agents/{agent.pk}/tools/").json()
    mcp = {t["name"]: t for t in manifest["tools"] if t["capability"] == f"mcp:{listed.pk}"}
    assert set(mcp) == {"plus", "wh_explode", "wh_slow_report", "wh_stock_count"}
    assert mcp["plus"]["tool_id"] == "add" and mcp["plus"]["renamed"] is True
    assert mcp["plus"]["approval"] == "not required"
    assert "add_task" in {t["name"] for t in manifest["tools"]}


def test_a_server_tool_name_no_model_accepts_must_be_renamed(
    org, owner, warehouse, listed_connection
):
    from apps.agents.validation import validate_spec

    listed = listed_connection(owner, org, warehouse.http_url, prefix="wh")
    McpConnection.objects.filter(pk=listed.pk).update(
        tools=[{"name": "orders.list", "description": "", "input_schema": {"type": "object"}}]
    )
    spec = {"mcp_connections": [listed.pk]}
    errors = validate_spec(spec, organization=org, actor=owner)
    assert [e.field for e in errors] == ["mcp_connections[0].tool_overrides.orders.list.name"]
    renamed = {
        "mcp_connections": [
            {"id": listed.pk, "tool_overrides": {"orders.list": {"name": "wh_orders"}}}
        ]
    }
    assert validate_spec(renamed, organization=org, actor=owner) == []
