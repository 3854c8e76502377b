"""In headless Chromium against the ASGI server and a real Celery worker (issue 6): a chat run
parks on a gated tool, the owner approves it — from the chat's own card, then from the Activity
approvals tab while the chat stays open — and the chat shows the resumed run finish."""

import pytest
from playwright.sync_api import expect

from apps.approvals.models import ToolApproval
from apps.runs.models import Run
from tests.runs.conftest import wait_for
from tests.runs.live import asgi_server  # noqa: F401  (fixture)
from tests.runs.test_live_browser import sign_in

from .factories import ADD_ONE, gated_agent

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_parked_chat_run_is_approved_from_its_card_and_from_the_queue_and_finishes(
    page,
    asgi_server,  # noqa: F811
    celery_worker,
    org,
    owner,
):
    base = f"http://{asgi_server}"
    gated_agent(org, name="Gated")
    sign_in(page, base, owner)

    page.goto(f"{base}/chat/")
    page.select_option("#chat-agent", label="Gated")
    page.fill("#chat-message", ADD_ONE)
    page.click("#chat-send")

    # Parked: the card comes in over the websocket with the tool and the arguments it will run.
    card = page.locator("#transcript .approval-card")
    card.wait_for()
    run = wait_for(Run.objects.get(organization=org).pk, statuses={"awaiting_approval"})
    assert "add_task" in card.inner_text() and "Email the customer" in card.inner_text()
    expect(page.locator("#chat-status")).to_have_text("Waiting for approval.")

    card.locator("input[name=note]").fill("Go ahead")
    card.locator("button[value=approve]").click()
    # The same run resumes on the same stream: the chat follows it to the end.
    expect(page.locator("#chat-status")).to_have_text("Done.")
    finished = wait_for(run.pk)
    assert finished.status == "completed", finished.error
    approval = ToolApproval.objects.get(run=run)
    assert (
        approval.status == "approved"
        and approval.note == "Go ahead"
        and approval.decided_by == owner
    )
    assert "Approved" in card.inner_text()
    answer = page.locator("#transcript .turn.assistant .text").last.inner_text()
    assert answer and answer == finished.output.strip()

    # A second gated turn, approved from Activity → Approvals in another tab while the chat waits.
    page.fill("#chat-message", ADD_ONE)
    page.click("#chat-send")
    page.locator("#transcript .approval-card").nth(1).wait_for()
    second = Run.objects.exclude(pk=run.pk).get(organization=org)
    wait_for(second.pk, statuses={"awaiting_approval"})

    queue = page.context.new_page()
    queue.goto(f"{base}/runs?tab=approvals&org={org.pk}")
    queue.wait_for_selector("#approvals-tab")
    row = queue.locator(f"#approval-queue tr[data-run-id='{second.pk}']")
    row.locator("input[name=note]").fill("From the queue")
    row.locator("button[value=approve]").click()
    queue.wait_for_selector(f"#decided-{ToolApproval.objects.get(run=second).pk}")
    assert "/activity/?tab=approvals" in queue.url

    page.bring_to_front()
    expect(page.locator("#chat-status")).to_have_text("Done.")
    assert wait_for(second.pk).status == "completed"
    # Once the run ends, the turn is the server's rendering: who decided, with their note.
    decided = page.locator("#transcript .approval-card").nth(1)
    expect(decided).to_contain_text("Approved by owner@acme.test")
    expect(decided).to_contain_text("From the queue")


def test_a_parked_run_reopened_after_a_reload_shows_one_card_and_finishes_when_approved(
    page,
    asgi_server,  # noqa: F811
    celery_worker,
    org,
    owner,
):
    base = f"http://{asgi_server}"
    gated_agent(org, name="Gated")
    sign_in(page, base, owner)
    page.goto(f"{base}/chat/")
    page.select_option("#chat-agent", label="Gated")
    page.fill("#chat-message", ADD_ONE)
    page.click("#chat-send")
    page.locator("#transcript .approval-card").wait_for()
    run = wait_for(Run.objects.get(organization=org).pk, statuses={"awaiting_approval"})

    # Reopened (any device): the card is drawn from the parked state, and the replayed frames
    # do not draw it a second time.
    page.reload()
    expect(page.locator("#chat-status")).to_have_text("Waiting for approval.")
    cards = page.locator("#transcript .approval-card")
    assert cards.count() == 1
    cards.first.locator("button[value=approve]").click()
    expect(page.locator("#chat-status")).to_have_text("Done.")
    finished = wait_for(run.pk)
    assert finished.status == "completed", finished.error
    assert (
        page.locator("#transcript .turn.assistant .text").last.inner_text()
        == finished.output.strip()
    )


def test_the_person_asked_answers_the_question_card_and_the_chat_shows_the_run_finish(
    page,
    asgi_server,  # noqa: F811
    celery_worker,
    org,
    member,
):
    from tests.runs.factories import published_agent

    base = f"http://{asgi_server}"
    published_agent(org, name="Asker", capabilities=[{"id": "ask_user"}])
    sign_in(page, base, member)
    page.goto(f"{base}/chat/")
    page.select_option("#chat-agent", label="Asker")
    page.fill("#chat-message", "/ask Should I close the account?")
    page.click("#chat-send")

    card = page.locator("#transcript .question-card")
    card.wait_for()
    assert "Should I close the account?" in card.inner_text()
    run = wait_for(Run.objects.get(organization=org).pk, statuses={"awaiting_answer"})
    card.locator("input[value=Yes]").check()
    card.locator("button[type=submit]").click()
    expect(page.locator("#chat-status")).to_have_text("Done.")
    finished = wait_for(run.pk)
    assert finished.status == "completed" and "Yes" in finished.output
    assert "Answered" in card.inner_text()
