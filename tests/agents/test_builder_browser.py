"""The Builder's main path in a real headless Chromium: create an agent, enable a capability,
set a config value, publish, see a validation error inline, fix it, publish version 2."""

import os

import pytest

from apps.agents.models import Agent, AgentVersion
from tests.factories import DEFAULT_PASSWORD

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
# Playwright's sync API runs an event loop in this thread; the ORM calls here are ordinary
# synchronous test setup and assertions, not code running inside that loop.
os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run",
]


@pytest.fixture
def page():
    from playwright.sync_api import sync_playwright

    if not os.path.exists(CHROMIUM):
        pytest.fail(f"{CHROMIUM} is missing: `apt-get install -y chromium`")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        context = browser.new_context()
        context.set_default_timeout(15000)
        yield context.new_page()
        browser.close()


def test_builder_create_enable_configure_publish_refused_fix_publish_v2(page, live_server, org, builder):
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
    assert page.is_checked('input[name="cap.web_research.enabled"]')  # recommended, from the template

    # Enable a capability and set a config value.
    guardrails = page.locator("#capability-guardrails")
    guardrails.locator('input[name="cap.guardrails.enabled"]').check()
    guardrails.locator("details.configure > summary").click()
    guardrails.locator('input[name="cap.guardrails.config.redact_pii_out"]').check()
    page.click("#publish")
    page.wait_for_selector("text=Published version 1.")
    v1 = AgentVersion.objects.get(agent=agent, number=1)
    assert next(b for b in v1.spec["capabilities"] if b["id"] == "guardrails")["config"] == {"redact_pii_out": True}

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
