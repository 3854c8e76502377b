"""The Builder's "Where this agent is available" section in headless Chromium: add a Slack binding
from the Builder page, see its webhook URL, test its credentials against a fake Slack, disable it
— each back on the Builder — with no axe violation in the section; its runs in Activity."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from apps.channels.models import Binding
from apps.runs.services import run_create
from tests.console.test_design_browser import _violations
from tests.factories import DEFAULT_PASSWORD

from .conftest import channel_secret

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_add_a_binding_test_it_and_disable_it(
    page, live_server, org, builder, agent, fake, settings
):
    slack = fake("slack")
    settings.AGENTICOS_PUBLIC_URL = live_server.url
    channel_secret(org, "Slack bot token", "xoxb-live")
    channel_secret(org, "Slack signing secret", "signing")

    page.goto(f"{live_server.url}/login/")
    page.fill("input[name=username]", builder.email)
    page.fill("input[name=password]", DEFAULT_PASSWORD)
    page.click("button[type=submit]")
    builder_url = f"{live_server.url}/agents/{agent.pk}/"
    page.goto(builder_url)
    section = page.get_by_role("region", name="Where this agent is available")
    expect(section.locator("#no-bindings")).to_be_visible()
    # Folded, so the Builder stays a few screens long; its summary opens it in place.
    expect(section.locator("#new-binding")).not_to_have_attribute("open", "")
    section.get_by_text("Add a binding", exact=True).click()
    expect(section.locator("#new-binding")).to_have_attribute("open", "")

    page.select_option("#binding-platform", "slack")
    page.fill("#binding-name", "Acme workspace")
    page.select_option("#binding-bot-token", label="Slack bot token")
    page.select_option("#binding-verification", label="Slack signing secret")
    page.fill("#binding-prompt", "Keep answers short.")
    page.get_by_label("Describe this channel").check()
    page.get_by_role("button", name="Add binding").click()

    binding = Binding.objects.get()
    # Back on the Builder, at the new binding.
    expect(page).to_have_url(f"{builder_url}#binding-{binding.pk}")
    expect(page.locator("#builder-form")).to_be_visible()
    panel = page.locator(f"#binding-{binding.pk}")
    expect(panel.locator(".webhook-url")).to_have_text(
        f"{live_server.url}/channels/slack/{binding.pk}/events/"
    )
    expect(panel).to_contain_text("get_channel_info")
    assert binding.channel_tools["tools"] == ["get_channel_info"]
    assert binding.prompt == "Keep answers short." and binding.created_by == builder

    panel.get_by_role("button", name="Test credentials").click()
    expect(page.locator(f"#binding-{binding.pk} .test-result")).to_have_text(
        "Connected to Slack workspace Acme as helperbot."
    )
    assert slack.called("auth.test")[0].authorization == "Bearer xoxb-live"
    expect(page).to_have_url(f"{builder_url}#binding-{binding.pk}")
    # The form is folded again on the way back; the section passes axe with a binding in it.
    expect(page.locator("#new-binding")).not_to_have_attribute("open", "")
    assert _violations(page) == []

    page.locator(f"#binding-{binding.pk}").get_by_role("button", name="Disable").click()
    expect(page.locator(f"#binding-{binding.pk} .badge.muted")).to_have_text("disabled")
    binding.refresh_from_db()
    assert binding.enabled is False

    # The binding's runs, in Activity with their surface.
    run_create(
        actor=None,
        organization=org,
        agent=agent,
        input="from slack",
        surface="slack",
        enqueue=False,
        exposure_id=binding.pk,
    )
    page.locator(f"#binding-{binding.pk}").get_by_role(
        "link", name="this binding's runs in Activity"
    ).click()
    expect(page.locator("table")).to_contain_text("Slack")
