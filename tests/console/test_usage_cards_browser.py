"""The dashboard's usage cards in headless Chromium (issue 22): the outcome donut is drawn, and a
card's figure opens the rows behind it — a surface opens Activity filtered to that surface, the
approvals figure opens the approvals tab."""

import re
import threading

import pytest
from playwright.sync_api import expect

from tests.approvals.factories import ADD_ONE, gated_agent, run_now
from tests.runs.factories import published_agent
from tests.runs.live import asgi_server  # noqa: F401  (fixture)
from tests.runs.test_live_browser import sign_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_usage_cards_draw_the_outcomes_and_link_to_their_rows(
    page,
    asgi_server,  # noqa: F811
    org,
    owner,
):
    def two_runs():
        run_now(owner, org, published_agent(org, name="Helper"), "hello", surface="api")
        run_now(owner, org, gated_agent(org, name="Gated"), ADD_ONE, surface="chat")

    # Off the test's thread: Playwright's own event loop runs on it, and the runner drives a
    # run with async_to_sync.
    runs = threading.Thread(target=two_runs)
    runs.start()
    runs.join()
    sign_in(page, asgi_server, owner)

    page.goto(f"{asgi_server}/")
    donut = page.locator("#usage-outcome-chart svg[role=img]")
    expect(donut).to_be_visible()
    expect(donut.locator("circle.segment")).to_have_count(2)  # completed, awaiting_approval

    page.locator("#usage-surfaces a", has_text="api").click()
    expect(page).to_have_url(re.compile(r"surface=api"))
    expect(page.locator("body")).to_contain_text("Helper")
    expect(page.locator("body")).not_to_contain_text("Gated")

    page.goto(f"{asgi_server}/")
    page.locator("#usage-approvals").click()
    expect(page).to_have_url(re.compile(r"tab=approvals"))
    expect(page.locator("body")).to_contain_text("Gated")
