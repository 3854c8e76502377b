"""The chat's thumbs in headless Chromium: a thumb is saved, pressed, and changeable; a thumbs
down opens a small comment form in the turn (no browser dialog), usable from the keyboard alone,
whose words are optional."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from apps.ratings.models import MessageRating
from apps.runs.models import Run
from apps.runs.runner import execute_run
from tests.console.test_design_browser import _violations
from tests.factories import DEFAULT_PASSWORD
from tests.runs.factories import published_agent, queued_run

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def answered(org, member) -> Run:
    """A finished chat turn, run before the browser starts (its event loop owns the thread)."""
    run = queued_run(member, org, published_agent(org), "hello there")
    execute_run(run.pk)
    return Run.objects.get(pk=run.pk)


def _open_chat(page, live_server, member, run):
    page.goto(f"{live_server.url}/login/")
    page.fill("input[name=username]", member.email)
    page.fill("input[name=password]", DEFAULT_PASSWORD)
    page.click("button[type=submit]")
    page.goto(f"{live_server.url}/chat/{run.conversation_id}/")


def test_a_thumb_on_an_answer_is_saved_and_can_be_changed(answered, page, live_server, member):
    run = answered
    dialogs = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    _open_chat(page, live_server, member, run)

    up = page.get_by_role("button", name="Good answer")
    up.click()
    expect(up).to_have_attribute("aria-pressed", "true")
    assert MessageRating.objects.get(run=run).thumb == "up"
    comment = page.get_by_label("What was wrong with this answer?")
    expect(comment).to_be_hidden()

    # From the keyboard: the thumb down is saved at once and the form takes the focus.
    down = page.get_by_role("button", name="Bad answer")
    down.focus()
    page.keyboard.press("Enter")
    expect(down).to_have_attribute("aria-pressed", "true")
    expect(up).to_have_attribute("aria-pressed", "false")
    expect(comment).to_be_visible()
    expect(comment).to_be_focused()
    assert MessageRating.objects.get(run=run).thumb == "down"
    assert _violations(page) == []  # the open form, in the design system, passes axe

    page.keyboard.type("It missed the point")
    page.keyboard.press("Tab")
    expect(page.get_by_role("button", name="Send comment")).to_be_focused()
    page.keyboard.press("Enter")
    expect(comment).to_be_hidden()
    expect(down).to_be_focused()
    expect(page.locator(".thumb-status")).to_have_text("Thanks — your comment was saved")
    rating = MessageRating.objects.get(run=run)
    assert (rating.thumb, rating.comment) == ("down", "It missed the point")
    assert dialogs == []  # no window.prompt any more

    page.reload()
    expect(page.get_by_role("button", name="Bad answer")).to_have_attribute("aria-pressed", "true")


def test_the_comment_is_optional_and_esc_closes_the_form(answered, page, live_server, member):
    run = answered
    _open_chat(page, live_server, member, run)
    down = page.get_by_role("button", name="Bad answer")
    down.click()
    comment = page.get_by_label("What was wrong with this answer?")
    expect(comment).to_be_focused()
    page.keyboard.press("Escape")
    expect(comment).to_be_hidden()
    expect(down).to_be_focused()
    rating = MessageRating.objects.get(run=run)
    assert (rating.thumb, rating.comment) == ("down", "")

    # Pressed again, the thumb is removed; pressed a third time, Skip closes the form as well.
    down.click()
    expect(down).to_have_attribute("aria-pressed", "false")
    down.click()
    expect(comment).to_be_visible()
    page.get_by_role("button", name="Skip").click()
    expect(comment).to_be_hidden()
    assert MessageRating.objects.get(run=run).comment == ""
