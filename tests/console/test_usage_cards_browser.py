"""The dashboard's usage cards in headless Chromium (issue 22): every card is a chart drawn on
the server, and a card's figure opens the rows behind it over the same window (period=30d) — a
surface opens Activity filtered to that surface with the card's count, the p95 figure opens it
sorted by Took, an agent opens its own history with its delegations, the approvals figure opens
the approvals tab."""

import re
import threading

import pytest
from playwright.sync_api import expect

from tests.approvals.factories import ADD_ONE, gated_agent, run_now
from tests.runs.factories import published_agent
from tests.runs.live import asgi_server  # noqa: F401  (fixture)
from tests.runs.test_live_browser import sign_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

CHARTS = ("outcomes", "latency", "surfaces", "quality", "providers", "agents")


def test_the_usage_cards_draw_their_charts_and_link_to_their_rows(
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
    for card in CHARTS:
        chart = page.locator(f"#usage-card-{card} svg[role=img]")
        expect(chart).to_be_visible()
        # Named for a screen reader by its title and described by its desc.
        assert chart.get_attribute("aria-labelledby").count(" ") == 1
    expect(page.locator("#usage-outcome-chart circle.segment")).to_have_count(2)
    expect(page.locator("#usage-card-surfaces svg .bar")).to_have_count(2)
    expect(page.locator("#usage-card-agents svg .bar-row")).to_have_count(2)
    expect(page.locator("#usage-card-agents")).to_contain_text("may add up to more than")

    page.locator("#usage-surfaces a", has_text="api").click()
    expect(page).to_have_url(re.compile(r"surface=api&period=30d"))
    expect(page.locator("#run-count")).to_contain_text("1 run")
    expect(page.locator("#filter-period")).to_have_value("30d")
    expect(page.locator("body")).to_contain_text("Helper")
    expect(page.locator("#runs-table")).not_to_contain_text("Gated")

    page.goto(f"{asgi_server}/")
    page.locator("#usage-p95").click()
    expect(page).to_have_url(re.compile(r"order_by=duration&period=30d"))
    expect(page.locator("#sort-took")).to_have_text(re.compile(r"Took\s+↓"))
    expect(page.locator("#run-count")).to_contain_text("2 runs")

    page.goto(f"{asgi_server}/")
    page.locator("#usage-agents a", has_text="Helper").click()
    expect(page).to_have_url(re.compile(r"agent_id=\d+&include_delegations=true&period=30d"))
    expect(page.locator("#run-count")).to_contain_text("1 run")

    page.goto(f"{asgi_server}/")
    page.locator("#usage-approvals").click()
    expect(page).to_have_url(re.compile(r"tab=approvals"))
    expect(page.locator("body")).to_contain_text("Gated")
