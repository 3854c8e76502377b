"""In headless Chromium against the ASGI server and a real Celery worker (issue 20): a run the
output guardrail blocks ends in chat as "Guardrail blocked" with nothing of the blocked answer
shown, and a compaction setting that cannot work says so in chat, once, with its numbers."""

import pytest
from playwright.sync_api import expect

from apps.orgs.services import organization_create
from apps.runs.models import Run
from tests.factories import UserFactory

from .conftest import wait_for
from .factories import published_agent
from .live import asgi_server  # noqa: F401  (fixture)
from .test_live_browser import sign_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _chat_with(page, base, agent_name, message):
    page.goto(f"{base}/chat/")
    page.select_option("#chat-agent", label=agent_name)
    page.fill("#chat-message", message)
    page.click("#chat-send")


def test_a_blocked_run_ends_guardrail_blocked_in_chat_with_nothing_of_the_answer_shown(
    page,
    asgi_server,  # noqa: F811
    celery_worker,
):
    base = f"http://{asgi_server}"
    founder = UserFactory(email="founder@guarded.test")
    organization = organization_create(actor=None, name="Guarded", owner=founder)
    # The offline model's answer says "This is the offline model answering."
    published_agent(
        organization,
        name="Guarded helper",
        capabilities=[{"id": "guardrails", "config": {"blocked_keywords_out": "offline model"}}],
    )
    sign_in(page, base, founder)

    _chat_with(page, base, "Guarded helper", "hello there")

    expect(page.locator("#chat-status")).to_have_text("Ended: Guardrail blocked.")
    run = wait_for(Run.objects.get(organization=organization).pk)
    assert run.status == "guardrail_blocked"
    turn = page.locator("#transcript .turn.assistant").last
    expect(turn.locator(".error")).to_contain_text("the agent's answer contained a blocked term")
    expect(turn).not_to_contain_text("offline model answering")

    page.reload()
    turn = page.locator("#transcript .turn.assistant").last
    expect(turn.locator(".error")).to_contain_text("blocked term")
    expect(turn).not_to_contain_text("offline model answering")


def test_a_compaction_setting_that_cannot_work_says_so_in_chat(
    page,
    asgi_server,  # noqa: F811
    celery_worker,
):
    base = f"http://{asgi_server}"
    founder = UserFactory(email="founder@compact.test")
    organization = organization_create(actor=None, name="Compact", owner=founder)
    published_agent(
        organization,
        name="Long talker",
        instructions="Follow the house style. " * 250,
        capabilities=[
            {
                "id": "compaction",
                "config": {"context_window": 4096, "max_fraction": 0.05, "keep_messages": 1},
            }
        ],
    )
    sign_in(page, base, founder)

    _chat_with(page, base, "Long talker", "/steps 3")

    expect(page.locator("#chat-status")).to_have_text("Done.")
    # Said once, in the run's turn (the live line hands over to the stored turn's drawing).
    notice = page.locator("#transcript .turn.assistant .compaction-notice")
    expect(notice).to_have_count(1)
    expect(notice).to_contain_text("Compaction is skipped")
    expect(notice).to_contain_text("above its trigger of 204 tokens (a 4096-token window)")
    run = wait_for(Run.objects.get(organization=organization).pk)
    assert run.status == "completed", run.error

    # Part of the stored turn: a reload says it again, once.
    page.reload()
    notice = page.locator("#transcript .turn.assistant .compaction-notice")
    expect(notice).to_have_count(1)
    expect(notice).to_contain_text("above its trigger of 204 tokens (a 4096-token window)")
    expect(page.locator("#chat-compaction")).to_be_hidden()
