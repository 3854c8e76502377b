"""In headless Chromium against the ASGI server and a real Celery worker: a fresh organization's
template agent reads a page with web_fetch, and the page is a source card in the chat — drawn live
from the tool_result frame, and the same card again after a reload from the stored transcript."""

import json

import pytest
from playwright.sync_api import expect

from apps.agents.template import TEMPLATE_AGENT_NAME
from apps.orgs.services import organization_create
from apps.runs.models import Run
from tests.factories import UserFactory
from tests.runs.conftest import celery_worker, wait_for  # noqa: F401  (fixture)
from tests.runs.live import asgi_server  # noqa: F401  (fixture)
from tests.runs.test_live_browser import sign_in

from .conftest import url
from .fakes import Page

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ARTICLE = "<html><head><title>Rates held at 4.5%</title></head><body><p>The bank held rates.</p></body></html>"


def _card(page):
    card = page.locator("#transcript .turn.assistant .source-card a")
    expect(card).to_have_count(1)
    return card


def test_a_fetched_page_is_a_source_card_live_and_after_a_reload(
    page,
    asgi_server,  # noqa: F811
    celery_worker,  # noqa: F811
    network,
    site,
):
    site.route("news.example", "/rates", Page(ARTICLE))
    link = url(site, "news.example", "/rates")
    base = f"http://{asgi_server}"
    founder = UserFactory(email="founder@fresh.test")
    organization = organization_create(actor=None, name="Fresh", owner=founder)
    sign_in(page, base, founder)

    page.goto(f"{base}/chat/")
    page.select_option("#chat-agent", label=TEMPLATE_AGENT_NAME)
    page.fill("#chat-message", "/call web_fetch " + json.dumps({"url": link}))
    page.click("#chat-send")

    card = _card(page)
    expect(card).to_contain_text("Rates held at 4.5%")
    expect(card).to_contain_text("news.example")
    assert card.get_attribute("href") == link
    expect(page.locator("#chat-status")).to_have_text("Done.")
    run = wait_for(Run.objects.get(organization=organization).pk)
    assert run.status == "completed", run.error

    page.reload()
    card = _card(page)
    expect(card).to_contain_text("Rates held at 4.5%")
    assert card.get_attribute("href") == link
