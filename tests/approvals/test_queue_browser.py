"""In headless Chromium: a run parks on a gated tool, the owner approves it from the queue, and
the run finishes (resumed on a real Celery worker)."""

import time

import pytest

from apps.runs.models import Run
from apps.runs.services import run_create
from tests.factories import DEFAULT_PASSWORD

from .conftest import wait_for
from .factories import ADD_ONE, gated_agent

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_owner_approves_a_parked_run_from_the_queue_and_it_finishes(
    page, live_server, celery_worker, org, owner
):
    agent = gated_agent(org)
    run = run_create(actor=owner, organization=org, agent=agent, input=ADD_ONE, surface="chat")
    assert (
        wait_for(run.pk, statuses={"awaiting_approval", "completed", "failed"}).status
        == "awaiting_approval"
    )

    page.goto(f"{live_server.url}/login/")
    page.fill("#id_username", owner.email)
    page.fill("#id_password", DEFAULT_PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_selector("#org-switcher")
    page.goto(f"{live_server.url}/approvals/")
    row = page.locator(f"#approval-queue tr[data-run-id='{run.pk}']")
    assert "Email the customer" in row.inner_text()
    row.locator("input[name=note]").fill("Looks right")
    row.locator("button[value=approve]").click()
    page.wait_for_selector("text=Approved add_task")

    finished = wait_for(run.pk)
    assert finished.status == "completed", finished.error
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        page.goto(f"{live_server.url}/approvals/")
        if page.inner_text(f".run-status[data-run-id='{run.pk}']") == "Completed":
            break
        time.sleep(0.2)
    assert page.inner_text(f".run-status[data-run-id='{run.pk}']") == "Completed"  # in words
    assert "Approved by" in page.inner_text("#approval-log")
    body = page.request.get(
        f"{live_server.url}/api/v1/runs/{run.pk}/", headers={"Accept": "application/json"}
    ).json()
    assert body["status"] == "completed"
    assert "Email the customer" in Run.objects.get(pk=run.pk).output
