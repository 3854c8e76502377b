"""In headless Chromium against the ASGI server and a real Celery worker (issue 8): on a fresh
organization, ask the AgenticOS template agent for a chart of three numbers and see it drawn —
live from the frames, and again after a reload from the stored data."""

import json

import pytest
from playwright.sync_api import expect

from apps.agents.template import TEMPLATE_AGENT_NAME
from apps.orgs.services import organization_create
from apps.runs.models import Run
from tests.factories import UserFactory

from .conftest import wait_for
from .live import asgi_server  # noqa: F401  (fixture)
from .test_live_browser import sign_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

CHART = {
    "title": "Three numbers",
    "kind": "bar",
    "x_values": ["one", "two", "three"],
    "series": [{"name": "Value", "values": [4, 9, 2]}],
}


def test_a_fresh_organizations_agent_draws_a_chart_in_chat(
    page,
    asgi_server,  # noqa: F811
    celery_worker,
):
    base = f"http://{asgi_server}"
    founder = UserFactory(email="founder@fresh.test")
    organization = organization_create(actor=None, name="Fresh", owner=founder)
    sign_in(page, base, founder)

    page.goto(f"{base}/chat/")
    page.select_option("#chat-agent", label=TEMPLATE_AGENT_NAME)
    page.fill("#chat-message", "/call create_chart " + json.dumps(CHART))
    page.click("#chat-send")

    page.wait_for_selector("#transcript .turn.assistant figure.chart svg")
    expect(page.locator("#chat-status")).to_have_text("Done.")
    run = wait_for(Run.objects.get(organization=organization).pk)
    assert run.status == "completed", run.error
    svg = page.locator("#transcript figure.chart svg")
    assert svg.count() == 1
    assert "Three numbers" in svg.inner_html() and svg.locator("rect").count() >= 3

    page.reload()
    page.wait_for_selector("#transcript .turn.assistant figure.chart svg")
    assert page.locator("#transcript figure.chart svg").count() == 1
    assert "Three numbers" in page.locator("#transcript figure.chart svg").inner_html()
