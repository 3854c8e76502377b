"""The Builder's main path in a real headless Chromium: create an agent, enable a capability,
set a config value, publish, see a validation error inline, fix it, publish version 2."""

import pytest

from apps.agents.models import Agent, AgentVersion
from tests.factories import DEFAULT_PASSWORD

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_builder_create_enable_configure_publish_refused_fix_publish_v2(
    page, live_server, org, builder
):
    page.goto(f"{live_server.url}/login/")
    page.fill("input[name=username]", builder.email)
    page.fill("input[name=password]", DEFAULT_PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_selector("#org-switcher")

    # Create: New agent starts as the AgenticOS template.
    page.goto(f"{live_server.url}/agents/")
    page.fill("#new-agent-name", "Browser bot")
    page.click("#new-agent")
    page.wait_for_selector("#builder-form")
    agent = Agent.objects.get(organization=org, name="Browser bot")
    assert page.is_checked(
        'input[name="cap.planning.enabled"]'
    )  # recommended and built: from the template
    assert page.is_checked('input[name="cap.web_research.enabled"]')  # recommended and built
    assert not page.is_checked(
        'input[name="cap.browser_use.enabled"]'
    )  # recommended, not built yet

    # Enable a capability and set a config value.
    guardrails = page.locator("#capability-guardrails")
    guardrails.locator('input[name="cap.guardrails.enabled"]').check()
    guardrails.locator("details.configure > summary").click()
    guardrails.locator('input[name="cap.guardrails.config.redact_pii_out"]').check()
    page.click("#publish")
    page.wait_for_selector("text=Published version 1.")
    v1 = AgentVersion.objects.get(agent=agent, number=1)
    assert next(b for b in v1.spec["capabilities"] if b["id"] == "guardrails")["config"] == {
        "redact_pii_out": True
    }

    # Capabilities are folded after a reload (issue 15: the page was 11,600 px tall); open one.
    assert not guardrails.locator("details.configure").evaluate("d => d.open")
    guardrails.locator("details.configure > summary").click()

    # A value publish refuses: the error appears next to its field.
    page.fill('input[name="cap.guardrails.config.phone_regions"]', "US, UK")
    page.click("#publish")
    error = page.locator('#capability-guardrails [data-field="phone_regions"] .field-error')
    error.wait_for()
    assert "UK" in error.inner_text()
    assert page.locator("#publish-errors").is_visible()
    assert not AgentVersion.objects.filter(agent=agent, number=2).exists()

    # Fix it and publish version 2.
    page.fill('input[name="cap.guardrails.config.phone_regions"]', "US, GB")
    page.click("#publish")
    page.wait_for_selector("text=Published version 2.")
    assert "v2" in page.locator("#version-history").inner_text()
    v2 = AgentVersion.objects.get(agent=agent, number=2)
    guard = next(b for b in v2.spec["capabilities"] if b["id"] == "guardrails")
    assert guard["config"] == {"redact_pii_out": True, "phone_regions": "US, GB"}
