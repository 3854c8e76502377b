"""In headless Chromium against the ASGI server and a real Celery worker: a chat run delegates to a
published agent whose gated tool parks the run; the delegation's panel shows the card, the owner
approves it from there, the delegate continues in place, and the panel closes with its run id,
which Activity ``?run=`` lists under the parent with its task-id badge."""

import pytest
from playwright.sync_api import expect

from apps.approvals.models import ToolApproval
from apps.runs.models import Run
from tests.runs.conftest import wait_for
from tests.runs.delegating import ADD, delegating, gated_helper, task_call
from tests.runs.live import asgi_server  # noqa: F401  (fixture)
from tests.runs.test_live_browser import sign_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_parked_delegate_is_approved_from_its_card_in_the_delegation_panel(
    page,
    asgi_server,  # noqa: F811
    celery_worker,
    org,
    owner,
):
    base = f"http://{asgi_server}"
    mailer = gated_helper(org)
    delegating(org, mailer, name="Orchestrator")
    sign_in(page, base, owner)

    page.goto(f"{base}/chat/")
    page.select_option("#chat-agent", label="Orchestrator")
    page.fill("#chat-message", task_call(ADD, "mailer"))
    page.click("#chat-send")

    panel = page.locator("#transcript .delegation")
    expect(panel.locator(".delegation-name")).to_have_text("mailer")
    card = panel.locator(".approval-card")
    expect(card).to_contain_text("asked by the delegate mailer")
    expect(card).to_contain_text("Email the customer")
    expect(panel.locator(".delegation-status")).to_have_text("Waiting for approval")
    run = wait_for(
        Run.objects.get(organization=org, parent_run=None).pk, statuses={"awaiting_approval"}
    )

    card.locator("button[value=approve]").click()

    expect(page.locator("#chat-status")).to_have_text("Done.")
    finished = wait_for(run.pk)
    assert finished.status == "completed", finished.error
    assert ToolApproval.objects.get(run=run).status == "approved"
    child = Run.objects.get(parent_run=run)
    # The turn as the server draws it: the delegation closed, linking to its own run.
    closed = page.locator(f"#transcript .delegation.done[data-task-id='{child.subagent_task_id}']")
    expect(closed.locator("a.delegation-run")).to_have_text(f"Run {child.pk}")

    closed.locator("a.delegation-run").click()
    expect(page.locator("#run-detail")).to_contain_text(f"Delegated by run #{run.pk}")
    expect(page.locator("#run-detail .task-id")).to_have_text(child.subagent_task_id)
    page.locator("#run-detail").get_by_role("link", name=f"run #{run.pk}").click()
    expect(page.locator("#run-detail")).to_contain_text(f"#{child.pk} Mailer")
    expect(page.locator("#run-detail .task-id")).to_have_text(child.subagent_task_id)


def test_a_delegates_question_is_answered_from_its_card_in_the_delegation_panel(
    page,
    asgi_server,  # noqa: F811
    celery_worker,
    org,
    member,
):
    # allow_questions: a sync delegate asks the person through the run's own ask_user channel;
    # the card is drawn inside the delegate's panel, naming it, and answering it continues that
    # delegate in place.
    from apps.approvals.models import Question
    from tests.runs.factories import published_agent

    base = f"http://{asgi_server}"
    helper = published_agent(org, name="Helper")
    delegating(org, helper, name="Orchestrator", config={"allow_questions": True})
    sign_in(page, base, member)

    page.goto(f"{base}/chat/")
    page.select_option("#chat-agent", label="Orchestrator")
    page.fill("#chat-message", task_call("/ask Should I send it?", "helper"))
    page.click("#chat-send")

    panel = page.locator("#transcript .delegation")
    expect(panel.locator(".delegation-name")).to_have_text("helper")
    card = panel.locator(".question-card")
    expect(card).to_contain_text("asked by the delegate helper")
    expect(card).to_contain_text("Should I send it?")
    run = wait_for(
        Run.objects.get(organization=org, parent_run=None).pk, statuses={"awaiting_answer"}
    )

    card.locator("input[value=Yes]").check()
    card.locator("button[type=submit]").click()

    expect(page.locator("#chat-status")).to_have_text("Done.")
    finished = wait_for(run.pk)
    assert finished.status == "completed", finished.error
    assert Question.objects.get(run=run).status == "answered"
    child = Run.objects.get(parent_run=run)
    assert "Yes" in child.output
    closed = page.locator(f"#transcript .delegation.done[data-task-id='{child.subagent_task_id}']")
    expect(closed.locator("a.delegation-run")).to_have_text(f"Run {child.pk}")
