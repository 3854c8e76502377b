"""Settings → Connections in the console: add (and list), test, rotate, clear, delete; the rules
are the services', so a token typed while impersonating is a 403 here too."""

from __future__ import annotations

import pytest

from apps.audit.models import AuditEntry
from apps.mcp.models import McpConnection

from .conftest import TOKEN

pytestmark = pytest.mark.django_db

PAGE = "/settings/connections/"


def test_adding_a_connection_lists_its_tools(client, owner, warehouse, mcp_allowed):
    client.force_login(owner)
    answer = client.post(
        PAGE,
        {
            "name": "Warehouse",
            "url": warehouse.http_url,
            "transport": "streamable_http",
            "scope": "organization",
            "token": TOKEN,
        },
        follow=True,
    )
    assert answer.status_code == 200
    page = answer.content.decode()
    assert "Warehouse: 4 tools listed" in page and "warehouse_stock_count" in page
    assert TOKEN not in page
    connection = McpConnection.objects.get()
    assert connection.tools_listed_at is not None

    tested = client.post(f"{PAGE}{connection.pk}/test/", follow=True).content.decode()
    assert "Reached Warehouse: the server offers 4 tools." in tested
    client.post(f"{PAGE}{connection.pk}/token/", {"token": "another-token-1234"})
    assert AuditEntry.objects.filter(action="mcp.connection.update").count() == 1
    client.post(f"{PAGE}{connection.pk}/token/", {"clear": "1"})
    assert McpConnection.objects.get().token_secret is None
    client.post(f"{PAGE}{connection.pk}/delete/")
    assert not McpConnection.objects.exists()


def test_an_internal_address_is_refused_on_the_form(client, owner):
    client.force_login(owner)
    answer = client.post(
        PAGE,
        {
            "name": "Inside",
            "url": "http://10.0.0.8/mcp",
            "transport": "sse",
            "scope": "organization",
        },
    )
    assert answer.status_code == 200
    assert "private, loopback or link-local" in answer.content.decode()
    assert not McpConnection.objects.exists()


def test_a_member_keeps_only_personal_connections(client, member, owner, warehouse, mcp_allowed):
    client.force_login(member)
    page = client.get(PAGE).content.decode()
    assert 'value="organization"' not in page
    refused = client.post(
        PAGE,
        {
            "name": "Shared",
            "url": warehouse.http_url,
            "transport": "streamable_http",
            "scope": "organization",
        },
    )
    assert refused.status_code == 200 and not McpConnection.objects.exists()
    client.post(
        PAGE,
        {
            "name": "Mine",
            "url": warehouse.http_url,
            "transport": "streamable_http",
            "scope": "personal",
            "token": TOKEN,
        },
    )
    assert McpConnection.objects.get().owner_id == member.pk


def test_a_token_typed_while_impersonating_is_refused(
    client, app_admin, owner, warehouse, mcp_allowed
):
    client.force_login(app_admin)
    client.post("/audit/impersonate/", {"email": owner.email, "reason": "support ticket"})
    answer = client.post(
        PAGE,
        {
            "name": "Warehouse",
            "url": warehouse.http_url,
            "transport": "streamable_http",
            "scope": "organization",
            "token": TOKEN,
        },
    )
    assert answer.status_code == 403
    assert not McpConnection.objects.exists()


def test_a_viewer_has_no_connections_page(client, viewer):
    client.force_login(viewer)
    assert client.get(PAGE).status_code == 403
