"""A cancelled run says so in its thread: a parked one cancelled from the console or the API (the
runs app's cancel hook, after the cancel commits), and a running one (its relay writes the end)
— each said once."""

from __future__ import annotations

import time

import pytest

from apps.channels.models import AccountLink, ChannelMessage
from apps.runs.models import Run
from apps.runs.services import run_cancel
from tests.approvals.factories import ADD_ONE, gated_agent
from tests.runs.conftest import celery_worker, wait_for, worker_drained  # noqa: F401  (fixture)
from tests.runs.factories import published_agent
from tests.runs.toolsets import echo_toolset, slow_ping  # noqa: F401  (fixtures)

from .conftest import (
    make_binding,
    mattermost_post,
    post_mattermost,
    post_slack,
    post_telegram,
    slack_event,
    telegram_update,
)

CANCELLED = "The run was cancelled."


@pytest.mark.django_db
def test_a_parked_slack_run_cancelled_over_the_api_is_announced_in_its_thread(
    org, builder, operator, fake, client_for, eager_celery, django_capture_on_commit_callbacks
):
    slack = fake("slack")
    binding = make_binding(org, builder, gated_agent(org, created_by=builder), "slack")
    with django_capture_on_commit_callbacks(execute=True):
        post_slack(binding, slack_event(f"<@U0BOT> {ADD_ONE}", ts="1700000000.000200"))
    run = Run.objects.get()
    assert run.status == "awaiting_approval"
    posts_before = len(slack.called("chat.postMessage"))

    with django_capture_on_commit_callbacks(execute=True):
        response = client_for(operator, org).post(f"/api/v1/runs/{run.pk}/cancel/")
    assert response.status_code == 200, response.content

    run.refresh_from_db()
    assert run.status == "cancelled"
    said = slack.called("chat.postMessage")[posts_before:]
    assert [call.body["text"] for call in said] == [CANCELLED]
    assert said[0].body["channel"] == "C0815" and said[0].body["thread_ts"] == "1700000000.000200"
    # The reply is booked on the message that admitted the run.
    assert said and len(ChannelMessage.objects.get(run=run).reply_ids) == posts_before + 1


@pytest.mark.django_db
def test_a_telegram_run_waiting_for_an_answer_cancelled_by_its_person_is_announced(
    org, builder, member, fake, eager_celery, django_capture_on_commit_callbacks
):
    telegram = fake("telegram")
    agent = published_agent(
        org, name="Asker", created_by=builder, capabilities=[{"id": "ask_user"}]
    )
    binding = make_binding(org, builder, agent, "telegram")
    AccountLink.objects.create(organization=org, platform="telegram", account_key="42", user=member)
    with django_capture_on_commit_callbacks(execute=True):
        post_telegram(
            binding,
            telegram_update("/ask Close it?", chat_id=-1007, chat_type="group", message_id=31),
        )
    run = Run.objects.get()
    assert run.status == "awaiting_answer" and run.user == member

    with django_capture_on_commit_callbacks(execute=True):
        run_cancel(actor=member, run=run)

    said = telegram.called("sendMessage")[-1].body
    assert said == {"chat_id": -1007, "text": CANCELLED, "reply_to_message_id": 31}


@pytest.mark.django_db
def test_a_parked_mattermost_run_cancelled_is_announced_under_its_post(
    org, builder, operator, fake, eager_celery, django_capture_on_commit_callbacks
):
    server = fake("mattermost")
    binding = make_binding(
        org, builder, gated_agent(org, created_by=builder), "mattermost", server_url=server.url
    )
    with django_capture_on_commit_callbacks(execute=True):
        post_mattermost(binding, mattermost_post(ADD_ONE, post_id="root9"))
    run = Run.objects.get()
    assert run.status == "awaiting_approval"

    with django_capture_on_commit_callbacks(execute=True):
        run_cancel(actor=operator, run=run)

    said = server.called("POST /posts")[-1].body
    assert said == {"channel_id": "chan1", "message": CANCELLED, "root_id": "root9"}


@pytest.mark.django_db
def test_a_cancel_that_rolls_back_or_a_run_of_no_channel_says_nothing(
    org, builder, operator, fake, eager_celery, django_capture_on_commit_callbacks
):
    from django.db import transaction

    from apps.runs.services import run_create

    slack = fake("slack")
    binding = make_binding(org, builder, gated_agent(org, created_by=builder), "slack")
    with django_capture_on_commit_callbacks(execute=True):
        post_slack(binding, slack_event(f"<@U0BOT> {ADD_ONE}"))
    run = Run.objects.get()
    calls = len(slack.calls)

    class RolledBack(Exception):
        pass

    with django_capture_on_commit_callbacks(execute=True), pytest.raises(RolledBack):
        with transaction.atomic():
            run_cancel(actor=operator, run=run)
            raise RolledBack
    run.refresh_from_db()
    assert run.status == "awaiting_approval" and len(slack.calls) == calls

    # A console run of the same agent is nobody's thread.
    console_run = run_create(
        actor=operator, organization=org, agent=run.agent, input="hello", enqueue=False
    )
    with django_capture_on_commit_callbacks(execute=True):
        run_cancel(actor=operator, run=console_run)
    console_run.refresh_from_db()
    assert console_run.status == "cancelled" and len(slack.calls) == calls


@pytest.mark.django_db(transaction=True)
def test_a_running_channel_run_cancelled_says_so_once_in_its_thread(
    org,
    builder,
    operator,
    fake,
    client_for,
    slow_ping,  # noqa: F811
    celery_worker,  # noqa: F811
):
    slack = fake("slack")
    agent = published_agent(
        org,
        name="Slow",
        created_by=builder,
        capabilities=[{"id": "planning"}],
        limits={"max_steps": 200},
    )
    binding = make_binding(org, builder, agent, "slack")
    assert post_slack(binding, slack_event("<@U0BOT> /steps 100")).status_code == 200
    deadline = time.monotonic() + 30
    while not Run.objects.filter(status="running").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    run = Run.objects.get()
    assert run.status == "running"

    response = client_for(operator, org).post(f"/api/v1/runs/{run.pk}/cancel/")
    assert response.status_code == 200, response.content
    run = wait_for(run.pk)
    assert run.status == "cancelled"
    deadline = time.monotonic() + 30
    while CANCELLED not in slack.texts() and time.monotonic() < deadline:
        time.sleep(0.05)
    # Would a second announcement follow? Whatever the cancel enqueued has run once the worker
    # reaches a marker sent now.
    worker_drained()
    # Said once, by the relay (the cancel hook leaves a running run to it), in the thread.
    assert slack.texts().count(CANCELLED) == 1 and slack.texts()[-1] == CANCELLED
    posts = slack.called("chat.postMessage")
    assert posts and all(call.body["thread_ts"] == "1700000000.000100" for call in posts)
