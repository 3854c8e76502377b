"""Chat and Activity in a real headless Chromium against the ASGI server (uvicorn in a thread)
with a real Celery worker: send a message on the offline model and watch the answer and its cost
stream in; then open Activity, sort by Took, and open a run's detail."""

import re

import pytest
from playwright.sync_api import expect

from apps.runs.models import Run
from tests.factories import DEFAULT_PASSWORD

from .conftest import wait_for
from .factories import published_agent
from .live import asgi_server  # noqa: F401  (fixture)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def sign_in(page, base, user):
    page.goto(f"{base}/login/")
    page.fill("input[name=username]", user.email)
    page.fill("input[name=password]", DEFAULT_PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_selector("#org-switcher")


def test_chat_streams_the_answer_and_its_cost_then_activity_sorts_by_took_and_opens_the_run(
    page,
    asgi_server,  # noqa: F811
    celery_worker,
    org,
    member,
):
    base = f"http://{asgi_server}"
    published_agent(org, name="Helper", capabilities=[{"id": "planning"}])
    sign_in(page, base, member)

    page.click("nav.mainnav >> text=Chat")
    page.wait_for_selector("#chat-form")
    page.select_option("#chat-agent", label="Helper")
    page.fill("#chat-message", "/steps 2")
    page.click("#chat-send")

    # Streamed in over the websocket: a tool call per step, the answer, the cost, then the end.
    page.wait_for_selector("#transcript .turn.assistant .tool-call")
    expect(page.locator("#chat-status")).to_have_text("Done.")
    run = Run.objects.get(organization=org)
    assert run.surface == "chat" and run.status == "completed"
    answer = page.locator("#transcript .turn.assistant .text").last.inner_text()
    assert answer and answer == run.output.strip()
    # The offline model's money is its rate card's, never a provider's bill: it says so.
    assert page.locator("#chat-cost").inner_text() == f"Cost ${float(run.cost_usd):.6f} (simulated)"
    assert "tokens in context" in page.locator("#chat-gauge").inner_text()
    assert page.url.endswith(f"/chat/{run.conversation_id}/")

    # Reopening the conversation shows the transcript from the database.
    page.reload()
    page.wait_for_selector("#transcript .turn.assistant")
    assert page.locator("#transcript .turn.assistant .text").last.inner_text() == answer

    # A second, quicker run, so Took has something to order.
    page.fill("#chat-message", "hello again")
    page.click("#chat-send")
    expect(page.locator("#chat-status")).to_have_text("Done.")
    wait_for(Run.objects.order_by("-pk").first().pk)

    page.click("nav.mainnav >> text=Activity")
    page.wait_for_selector("#runs-table")
    assert page.locator("#run-count").inner_text() == "2 runs"
    page.click("#sort-took")
    page.wait_for_url(re.compile(r"order_by=duration"))
    runs = sorted(
        Run.objects.filter(organization=org), key=lambda r: r.ended_at - r.started_at, reverse=True
    )
    ordered = page.locator("#runs-table tbody tr").evaluate_all(
        "rows => rows.map(r => Number(r.dataset.runId))"
    )
    assert ordered == [r.pk for r in runs]
    page.locator(f'tr[data-run-id="{run.pk}"] a.run-link').click()
    page.wait_for_selector("#run-detail")
    assert f"Run #{run.pk}" in page.locator("#run-detail h2").inner_text()
    assert "order_by=duration" in page.url and f"run={run.pk}" in page.url
