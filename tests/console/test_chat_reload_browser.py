"""The chat after a reload is the chat that was seen live (issue 15), in headless Chromium against
the ASGI server and a real Celery worker with the offline model: a run parks on a gated tool and
is approved, a second run asks a question and is answered; the transcript, read turn by turn,
is the same before and after the reload — one turn per run, each tool call once, the cards
resolved with what was decided, the status in words, Markdown rendered."""

import pytest
from playwright.sync_api import expect

from apps.runs.models import Run
from tests.approvals.factories import ADD_ONE, gated_agent
from tests.runs.conftest import celery_worker, wait_for  # noqa: F401  (fixture)
from tests.runs.live import asgi_server  # noqa: F401  (fixture)
from tests.runs.test_live_browser import sign_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Counts every tool line the page inserts on its own (not inside a turn swapped in whole): a
# resumed run replays the call it parked on, and the live view must not draw it twice.
COUNT_TOOL_LINES = """() => {
  window.toolLines = {};
  new MutationObserver(records => records.forEach(r => r.addedNodes.forEach(node => {
    if (node.nodeType === 1 && node.matches('li.tool-call')) {
      const id = node.dataset.toolCallId;
      window.toolLines[id] = (window.toolLines[id] || 0) + 1;
    }
  }))).observe(document.getElementById('transcript'), {childList: true, subtree: true});
}"""
SNAPSHOT = """() => Array.from(document.querySelectorAll('#transcript > li')).map(li => ({
  role: li.classList.contains('user') ? 'user' : 'assistant',
  run: li.dataset.runId || null,
  text: li.innerText.replace(/\\s+/g, ' ').trim(),
  toolCalls: li.querySelectorAll('.tool-call').length,
  toolResults: li.querySelectorAll('.tool-result').length,
  cards: Array.from(li.querySelectorAll('.card')).map(c => c.className),
  markdown: li.querySelectorAll('.text p').length,
  badges: Array.from(li.querySelectorAll('.badge')).map(b => b.innerText),
}))"""


def _settled(page, run_id):
    """The run's turn is the server's drawing of the finished run (swapped in when it ended)."""
    page.wait_for_selector(
        f'#transcript .turn.assistant[data-run-id="{run_id}"][data-status="completed"]'
    )


@pytest.mark.parametrize(
    "viewport",
    [{"width": 1440, "height": 900}, {"width": 390, "height": 844}],
    ids=["desktop", "phone"],
)
def test_a_conversation_that_parked_was_approved_and_answered_reads_the_same_after_a_reload(
    viewport,
    page,
    asgi_server,  # noqa: F811
    celery_worker,  # noqa: F811
    org,
    owner,
):
    base = f"http://{asgi_server}"
    gated_agent(org, name="Gated", extra_capabilities=[{"id": "ask_user"}])
    sign_in(page, base, owner)
    page.set_viewport_size(viewport)
    page.goto(f"{base}/chat/")
    page.evaluate(COUNT_TOOL_LINES)
    page.select_option("#chat-agent", label="Gated")

    # Enter sends; Shift+Enter was a new line in the same message.
    page.fill("#chat-message", ADD_ONE)
    page.press("#chat-message", "Enter")
    card = page.locator("#transcript .approval-card")
    card.wait_for()
    first = wait_for(Run.objects.get(organization=org).pk, statuses={"awaiting_approval"})
    # The new conversation is in the sidebar at once, its title without the command's JSON.
    current = page.locator("#thread-list li.current a")
    # (On a phone the list is folded: its text is there, not drawn.)
    assert current.text_content() == "add_task: Email the customer"
    # Locators, not string predicates: the console's CSP runs no eval'd code.
    expect(page.locator("#chat-status")).to_have_text("Waiting for approval.")
    # Its state in words while it waits, as a reload would draw it.
    expect(page.locator(".turn.assistant .badge.status-awaiting_approval")).to_have_text(
        "Awaiting approval"
    )
    card.locator("input[name=note]").fill("Go ahead")
    card.locator("button[value=approve]").click()
    expect(page.locator("#chat-status")).to_have_text("Done.")
    assert wait_for(first.pk).status == "completed"
    _settled(page, first.pk)

    page.fill("#chat-message", "/ask Shall I send it?")
    page.press("#chat-message", "Shift+Enter")
    page.type("#chat-message", "Answer yes or no.")
    assert page.input_value("#chat-message") == "/ask Shall I send it?\nAnswer yes or no."
    page.press("#chat-message", "Enter")
    question = page.locator("#transcript .question-card")
    question.wait_for()
    second = Run.objects.exclude(pk=first.pk).get(organization=org)
    wait_for(second.pk, statuses={"awaiting_answer"})
    question.locator("input[value=Yes]").check()
    question.locator("button[type=submit]").click()
    expect(page.locator("#chat-status")).to_have_text("Done.")
    assert wait_for(second.pk).status == "completed"
    _settled(page, second.pk)

    live = page.evaluate(SNAPSHOT)
    drawn = page.evaluate("window.toolLines")
    assert drawn and all(count == 1 for count in drawn.values()), drawn

    # What was seen live: four turns, one per message and one per run.
    assert [t["role"] for t in live] == ["user", "assistant", "user", "assistant"]
    assert [t["run"] for t in live if t["role"] == "assistant"] == [str(first.pk), str(second.pk)]
    approved, answered = live[1], live[3]
    assert approved["toolCalls"] == 1 and approved["toolResults"] == 1
    assert approved["cards"] == ["card approval-card resolved"]
    assert "Approved by" in approved["text"] and "Go ahead" in approved["text"], approved["text"]
    assert answered["cards"] == ["card question-card resolved"]
    assert "Answered" in answered["text"] and "Yes" in answered["text"]
    assert approved["markdown"] >= 1 and answered["markdown"] >= 1
    assert "simulated" in approved["text"] and "simulated" in answered["text"]
    # Statuses in words, never snake_case; a finished run carries no stale "Awaiting" badge.
    assert all("_" not in badge for turn in live for badge in turn["badges"])
    assert approved["badges"] == ["simulated"] and answered["badges"] == ["simulated"]

    assert not page.is_visible("#chat-cancel")  # nothing is running

    page.reload()
    page.wait_for_selector("#transcript .turn.assistant")
    assert not page.is_visible("#chat-cancel")
    assert page.evaluate(SNAPSHOT) == live
    # Opened scrolled to the newest message.
    assert (
        page.evaluate(
            "(() => { const t = document.getElementById('transcript');"
            " return t.scrollHeight - t.clientHeight - t.scrollTop; })()"
        )
        <= 2
    )
