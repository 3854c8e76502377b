"""In headless Chromium against the ASGI server and a real Celery worker: an owner adds an MCP
connection under Settings → Connections, binds it in the Builder, and calls one of its tools from
the chat."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from apps.agents.models import Agent
from apps.mcp.models import McpConnection
from apps.runs.models import Run
from tests.console.test_design_browser import (
    DESKTOP,
    PHONE,
    _sideways_overflow,
    _violations,
)
from tests.console.test_design_browser import sign_in as sign_in_design
from tests.runs.conftest import celery_worker, wait_for  # noqa: F401  (fixtures)
from tests.runs.live import asgi_server  # noqa: F401  (fixture)
from tests.runs.test_live_browser import sign_in

from .conftest import TOKEN

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_add_a_connection_bind_it_and_call_its_tool_from_chat(
    page,
    asgi_server,  # noqa: F811
    celery_worker,  # noqa: F811
    org,
    owner,
    warehouse,
    mcp_allowed,
):
    base = f"http://{asgi_server}"
    agent = Agent.objects.create(
        organization=org, name="Stocker", draft_spec={"instructions": "Help."}, created_by=owner
    )
    sign_in(page, base, owner)

    page.goto(f"{base}/settings/connections/")
    page.fill("#id_name", "Warehouse")
    page.fill("#id_url", warehouse.http_url)
    page.select_option("#id_transport", "streamable_http")
    page.fill("#id_token", TOKEN)
    page.click("#add-connection button[type=submit]")
    expect(page.locator("body")).to_contain_text("Warehouse: 4 tools listed")
    connection = McpConnection.objects.get()
    row = page.locator(f"#connections tr[data-connection='{connection.pk}']")
    expect(row).to_contain_text("4 tools")
    row.locator("summary").click()
    expect(row).to_contain_text("warehouse_stock_count")

    page.goto(f"{base}/agents/{agent.pk}/")
    page.check(f"#mcp-{connection.pk}-enabled")
    page.click("#publish")
    expect(page.locator("h1")).to_contain_text("v1 published")

    page.goto(f"{base}/chat/")
    page.select_option("#chat-agent", label="Stocker")
    page.fill("#chat-message", '/call warehouse_stock_count {"sku": "A-7"}')
    page.click("#chat-send")
    expect(page.locator("#chat-status")).to_have_text("Done.")
    run = wait_for(Run.objects.get(organization=org).pk)
    assert run.status == "completed", run.error
    expect(page.locator("#transcript")).to_contain_text("warehouse_stock_count")
    expect(page.locator("#transcript .turn.assistant .text").last).to_contain_text(
        "A-7: 42 units in stock"
    )


@pytest.fixture
def builder_with_many_tools(org, owner, catalog, warehouse, listed_connection):
    """Set up before the browser starts (its event loop would refuse the synchronous listing)."""
    listed_connection(owner, org, warehouse.http_url)
    many = listed_connection(owner, org, catalog.http_url, name="Catalog", token=None)
    return Agent.objects.create(
        organization=org,
        name="Stocker",
        draft_spec={"instructions": "Help.", "mcp_connections": [many.pk]},
        created_by=owner,
    )


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_the_connections_page_and_the_builders_mcp_section_pass_axe_and_fit_a_phone(
    builder_with_many_tools, page, live_server, owner, viewport
):
    agent = builder_with_many_tools
    page.set_viewport_size(viewport)
    sign_in_design(page, live_server.url, owner)
    problems = {}
    for name, path in {
        "Connections": "/settings/connections/",
        "Builder with 100 MCP tools": f"/agents/{agent.pk}/",
    }.items():
        assert page.goto(live_server.url + path).status == 200
        found = _violations(page)
        if viewport == PHONE and (overflow := _sideways_overflow(page)) > 0:
            found.append(f"scrolls sideways by {overflow}px at 390px")
        if found:
            problems[name] = found
    expect(page.locator("#mcp-tool-warning")).to_contain_text("100 tools")
    assert not problems, "\n".join(f"{name}: {found}" for name, found in problems.items())
