"""The Triggers tab in headless Chromium: create a schedule, fire it now, see its run."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from apps.runs.models import Run
from tests.factories import DEFAULT_PASSWORD
from tests.runs.conftest import (
    celery_worker,  # noqa: F401  (fixture)
    wait_for,
)
from tests.runs.factories import published_agent

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_create_a_schedule_fire_it_now_and_see_the_run(
    page,
    live_server,
    org,
    builder,
    celery_worker,  # noqa: F811
):
    agent = published_agent(org, name="Reporter", created_by=builder)
    page.goto(f"{live_server.url}/login/")
    page.fill("input[name=username]", builder.email)
    page.fill("input[name=password]", DEFAULT_PASSWORD)
    page.click("button[type=submit]")
    page.goto(f"{live_server.url}/agents/{agent.pk}/")
    page.get_by_role("link", name="Triggers").click()
    expect(page.locator("#no-triggers")).to_be_visible()

    page.fill("#trigger-name", "Morning report")
    page.select_option("#trigger-kind", "schedule")
    page.fill("#trigger-prompt", "Write the morning report")
    page.fill("#trigger-cron", "0 9 * * 1-5")
    page.fill("#trigger-timezone", "Europe/Madrid")
    page.get_by_role("button", name="Create trigger").click()
    panel = page.locator("section.panel", has_text="Morning report")
    expect(panel).to_contain_text("cron 0 9 * * 1-5 (Europe/Madrid)")
    expect(panel.locator(".next-fire")).not_to_have_text("—")
    expect(panel.locator(".last-run")).to_have_text("never fired")

    panel.get_by_role("button", name="Fire now").click()
    run = Run.objects.get(agent=agent)
    assert run.surface == "schedule" and run.user_id == builder.pk
    wait_for(run.pk)
    page.reload()
    panel = page.locator("section.panel", has_text="Morning report")
    expect(panel.locator(".last-run")).to_contain_text(f"run {run.pk}")
    expect(panel.locator(".last-run .badge")).to_have_text("Completed")
    panel.locator(".last-run a").click()
    expect(page).to_have_url(f"{live_server.url}/activity/?run={run.pk}")
