"""The chat's thumbs in headless Chromium: a thumb is saved, pressed, and changeable."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from apps.ratings.models import MessageRating
from apps.runs.models import Run
from apps.runs.runner import execute_run
from tests.factories import DEFAULT_PASSWORD
from tests.runs.factories import published_agent, queued_run

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def answered(org, member) -> Run:
    """A finished chat turn, run before the browser starts (its event loop owns the thread)."""
    run = queued_run(member, org, published_agent(org), "hello there")
    execute_run(run.pk)
    return Run.objects.get(pk=run.pk)


def test_a_thumb_on_an_answer_is_saved_and_can_be_changed(answered, page, live_server, member):
    run = answered
    page.goto(f"{live_server.url}/login/")
    page.fill("input[name=username]", member.email)
    page.fill("input[name=password]", DEFAULT_PASSWORD)
    page.click("button[type=submit]")
    page.goto(f"{live_server.url}/chat/{run.conversation_id}/")

    up = page.get_by_role("button", name="Good answer")
    up.click()
    expect(up).to_have_attribute("aria-pressed", "true")
    assert MessageRating.objects.get(run=run).thumb == "up"

    page.on("dialog", lambda dialog: dialog.accept("It missed the point"))
    down = page.get_by_role("button", name="Bad answer")
    down.click()
    expect(down).to_have_attribute("aria-pressed", "true")
    expect(up).to_have_attribute("aria-pressed", "false")
    rating = MessageRating.objects.get(run=run)
    assert (rating.thumb, rating.comment) == ("down", "It missed the point")
    page.reload()
    expect(page.get_by_role("button", name="Bad answer")).to_have_attribute("aria-pressed", "true")
