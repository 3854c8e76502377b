"""The production path: a real Celery worker (its own queue) takes the webhook's task, drives
the run on its runtime and relays it; a decision in the queue resumes it on the worker, into
the same thread."""

from __future__ import annotations

import time

import pytest

from apps.approvals.models import ToolApproval
from apps.channels.models import ChannelMessage
from apps.runs.models import Run
from tests.approvals.factories import ADD_ONE, gated_agent
from tests.runs.conftest import celery_worker, wait_for  # noqa: F401  (fixture)

from .conftest import make_binding, post_slack, slack_event

pytestmark = pytest.mark.django_db(transaction=True)


def eventually(check, timeout=30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.05)
    raise AssertionError("not within the time")


def test_a_worker_runs_the_message_and_a_decision_resumes_it_into_the_thread(
    org,
    builder,
    operator,
    fake,
    client_for,
    celery_worker,  # noqa: F811
):
    slack = fake("slack")
    binding = make_binding(org, builder, gated_agent(org, created_by=builder), "slack")
    assert post_slack(binding, slack_event("<@U0BOT> hello")).status_code == 200
    eventually(lambda: Run.objects.exists())
    run = wait_for(Run.objects.get().pk)
    assert run.status == "completed" and run.surface == "slack"
    eventually(lambda: bool(ChannelMessage.objects.get().reply_ids))
    assert slack.called("chat.update")[-1].body["text"] == run.output

    assert (
        post_slack(
            binding, slack_event(f"<@U0BOT> {ADD_ONE}", event_id="Ev2", ts="1700000000.000777")
        ).status_code
        == 200
    )
    eventually(lambda: Run.objects.count() == 2)
    parked = wait_for(Run.objects.latest("created_at").pk, statuses={"awaiting_approval"})
    eventually(lambda: "approvals queue" in (slack.texts() or [""])[-1])
    approval = ToolApproval.objects.get(run=parked)
    response = client_for(operator, org).post(
        f"/api/v1/approvals/{approval.pk}/decide/", {"decision": "approve"}, format="json"
    )
    assert response.status_code == 200, response.content
    done = wait_for(parked.pk)
    assert done.status == "completed", done.error
    eventually(lambda: slack.texts()[-1] == done.output)
    assert slack.called("chat.postMessage")[-1].body["thread_ts"] == "1700000000.000777"
