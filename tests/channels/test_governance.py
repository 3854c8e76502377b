"""Governance in the thread: a gated call parks the run and the thread links to the queue (with
org=); deciding it there resumes the run into the same thread; a channel never approves; a
question is answered from the thread by the person asked."""

from __future__ import annotations

import pytest

from apps.approvals.models import Question, ToolApproval
from apps.approvals.services import approval_decide
from apps.channels.models import AccountLink, ChannelMessage
from apps.runs.models import Run
from tests.approvals.factories import ADD_ONE, gated_agent
from tests.runs.factories import published_agent

from .conftest import make_binding, post_slack, slack_event


def send(binding, payload, capture):
    with capture(execute=True):
        response = post_slack(binding, payload)
    assert response.status_code == 200, response.content


@pytest.fixture
def slack(fake):
    return fake("slack")


@pytest.mark.django_db
def test_a_gated_call_is_announced_with_the_queue_link_and_resumes_into_the_thread(
    org,
    builder,
    operator,
    member,
    slack,
    settings,
    eager_celery,
    django_capture_on_commit_callbacks,
):
    settings.AGENTICOS_PUBLIC_URL = "https://agents.acme.test"
    binding = make_binding(org, builder, gated_agent(org, created_by=builder), "slack")
    AccountLink.objects.create(
        organization=org, platform="slack", account_key="T042:U42", user=member
    )
    send(binding, slack_event(f"<@U0BOT> {ADD_ONE}"), django_capture_on_commit_callbacks)

    run = Run.objects.get()
    assert run.status == "awaiting_approval"
    approval = ToolApproval.objects.get(run=run)
    announced = slack.texts()[-1]
    assert "add_task" in announced
    assert f"https://agents.acme.test/runs?tab=approvals&org={org.pk}" in announced
    assert "nothing in this thread can approve it" in announced

    # Saying "approve" in the thread approves nothing: it is told where the queue is.
    send(
        binding,
        slack_event(
            "<@U0BOT> approve",
            event_id="Ev2",
            ts="1700000000.000300",
            thread_ts="1700000000.000100",
        ),
        django_capture_on_commit_callbacks,
    )
    approval.refresh_from_db()
    assert approval.status == "pending" and Run.objects.count() == 1
    assert "a chat cannot do" in slack.texts()[-1]

    # Decided in the queue: the resume runs on commit and its answer goes to the same thread.
    posts_before = len(slack.called("chat.postMessage"))
    with django_capture_on_commit_callbacks(execute=True):
        approval_decide(actor=operator, approval=approval, decision="approve")
    run.refresh_from_db()
    assert run.status == "completed", run.error
    new_posts = slack.called("chat.postMessage")[posts_before:]
    assert new_posts and all(p.body["thread_ts"] == "1700000000.000100" for p in new_posts)
    assert slack.texts()[-1] == run.output
    assert len(ChannelMessage.objects.get(run=run).reply_ids) >= 3


@pytest.mark.django_db
def test_a_question_is_answered_from_the_thread_by_the_person_asked(
    org, builder, member, owner, slack, eager_celery, django_capture_on_commit_callbacks
):
    agent = published_agent(
        org, name="Asker", created_by=builder, capabilities=[{"id": "ask_user"}]
    )
    binding = make_binding(org, builder, agent, "slack")
    AccountLink.objects.create(
        organization=org, platform="slack", account_key="T042:U42", user=member
    )
    AccountLink.objects.create(
        organization=org, platform="slack", account_key="T042:U99", user=owner
    )
    send(
        binding,
        slack_event("<@U0BOT> /ask Should I close the account?"),
        django_capture_on_commit_callbacks,
    )
    run = Run.objects.get()
    assert run.status == "awaiting_answer"
    card = slack.texts()[-1]
    assert "Should I close the account?" in card and "1) Yes" in card and "2) No" in card

    reply = dict(event_id="Ev3", ts="1700000000.000400", thread_ts="1700000000.000100")
    # Somebody else in the thread cannot answer for the person asked.
    send(
        binding, slack_event("<@U0BOT> 2", user="U99", **reply), django_capture_on_commit_callbacks
    )
    assert Question.objects.get().status == "pending"
    assert "Only the person the agent asked" in slack.texts()[-1]

    reply["event_id"], reply["ts"] = "Ev4", "1700000000.000500"
    send(binding, slack_event("<@U0BOT> 1", **reply), django_capture_on_commit_callbacks)
    question = Question.objects.get()
    assert question.status == "answered"
    run.refresh_from_db()
    assert run.status == "completed", run.error
    assert "Yes" in run.output and slack.texts()[-1] == run.output
    assert ChannelMessage.objects.get(delivery_id="Ev4").outcome == "answer"


@pytest.mark.django_db
def test_an_unlinked_senders_question_is_declined_not_parked(
    org, builder, slack, eager_celery, django_capture_on_commit_callbacks
):
    # Nobody here can answer as an unlinked sender, so the agent is told they declined.
    agent = published_agent(
        org, name="Asker", created_by=builder, capabilities=[{"id": "ask_user"}]
    )
    binding = make_binding(org, builder, agent, "slack")
    send(binding, slack_event("<@U0BOT> /ask Which one?"), django_capture_on_commit_callbacks)
    run = Run.objects.get()
    assert run.status == "completed" and "declined to answer" in run.output
    assert not Question.objects.exists()


@pytest.mark.django_db
def test_a_parked_run_nobody_decides_in_time_is_said_in_its_thread(
    org, builder, slack, eager_celery, django_capture_on_commit_callbacks
):
    import datetime as dt

    from django.utils import timezone

    from apps.approvals.services import approvals_expire_stale

    binding = make_binding(org, builder, gated_agent(org, created_by=builder), "slack")
    send(binding, slack_event(f"<@U0BOT> {ADD_ONE}"), django_capture_on_commit_callbacks)
    run = Run.objects.get()
    with django_capture_on_commit_callbacks(execute=True):
        approvals_expire_stale(now=timezone.now() + dt.timedelta(hours=100))
    run.refresh_from_db()
    assert run.status == "cancelled"
    said = slack.called("chat.postMessage")[-1].body
    assert said["thread_ts"] == "1700000000.000100"
    assert "72 hours" in said["text"] and "cancelled" in said["text"]
