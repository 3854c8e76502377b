"""The Builder's MCP servers section: bind a connection, rename a tool, and the warning above 30
tools whose button binds tool search (and nothing binds it on its own)."""

from __future__ import annotations

import pytest

from apps.agents.models import Agent

pytestmark = pytest.mark.django_db


def _agent(org, owner) -> Agent:
    return Agent.objects.create(
        organization=org, name="Stocker", draft_spec={"instructions": "Help."}, created_by=owner
    )


def _post(client, agent, **fields):
    data = {"name": agent.name, "instructions": "Help.", "max_steps": "25", "mcp.shown": "1"}
    data.update(fields)
    return client.post(f"/agents/{agent.pk}/", data)


def test_binding_a_connection_and_renaming_a_tool(client, org, owner, warehouse, listed_connection):
    connection = listed_connection(owner, org, warehouse.http_url, prefix="wh")
    agent = _agent(org, owner)
    client.force_login(owner)
    page = client.get(f"/agents/{agent.pk}/").content.decode()
    assert f'name="mcp.{connection.pk}.enabled"' in page and "wh_stock_count" in page

    _post(
        client,
        agent,
        **{f"mcp.{connection.pk}.enabled": "on", f"mcp.{connection.pk}.tool.add.name": "plus"},
        action="publish",
    )
    agent.refresh_from_db()
    [bound] = agent.draft_spec["mcp_connections"]
    assert bound["id"] == connection.pk and bound["enabled"] is True
    assert bound["tool_overrides"]["add"]["name"] == "plus"
    assert agent.current_version is not None  # published: the binding passed the publish rules
    page = client.get(f"/agents/{agent.pk}/").content.decode()
    assert 'id="mcp-tool-warning"' not in page  # four tools: nothing to warn about


def test_above_thirty_tools_the_section_warns_and_its_button_binds_tool_search(
    client, org, owner, catalog, listed_connection
):
    connection = listed_connection(owner, org, catalog.http_url, name="Catalog", token=None)
    agent = _agent(org, owner)
    client.force_login(owner)
    _post(client, agent, **{f"mcp.{connection.pk}.enabled": "on"}, action="save")
    agent.refresh_from_db()
    # Saving a draft with 100 MCP tools never binds tool search by itself.
    assert not any(b["id"] == "tool_search" for b in agent.draft_spec.get("capabilities", []))

    page = client.get(f"/agents/{agent.pk}/").content.decode()
    assert 'id="mcp-tool-warning"' in page and "<strong>100 tools</strong>" in page
    assert "tokens</strong> of tool schemas" in page

    answer = _post(
        client, agent, **{f"mcp.{connection.pk}.enabled": "on"}, action="bind_tool_search"
    )
    assert answer.status_code == 302
    agent.refresh_from_db()
    assert {"id": "tool_search", "enabled": True} in [
        {k: b[k] for k in ("id", "enabled")} for b in agent.draft_spec["capabilities"]
    ]
    page = client.get(f"/agents/{agent.pk}/").content.decode()
    assert 'id="mcp-tool-warning"' not in page and 'id="mcp-tool-search-on"' in page


def test_another_members_personal_binding_survives_an_edit(
    client, org, owner, member, warehouse, listed_connection
):
    personal = listed_connection(member, org, warehouse.http_url, name="Ana", scope="personal")
    agent = _agent(org, owner)
    agent.draft_spec = {"instructions": "Help.", "mcp_connections": [{"id": personal.pk}]}
    agent.save(update_fields=["draft_spec"])
    client.force_login(owner)
    page = client.get(f"/agents/{agent.pk}/").content.decode()
    assert f"mcp.{personal.pk}.enabled" not in page  # not theirs to see
    _post(client, agent, action="save")
    agent.refresh_from_db()
    [kept] = agent.draft_spec["mcp_connections"]
    assert kept["id"] == personal.pk and kept["enabled"] is True
