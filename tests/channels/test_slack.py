"""Slack end to end against a fake Slack API on 127.0.0.1: a signed event -> a deduplicated run
-> a reply posted in the thread and edited as the text streams."""

from __future__ import annotations

import time

import pytest

from apps.channels.models import ChannelMessage, ChatThread
from apps.runs.models import Run

from .conftest import make_binding, post_slack, slack_event


@pytest.fixture
def slack(fake):
    return fake("slack")


@pytest.fixture
def binding(org, builder, agent, slack):
    return make_binding(org, builder, agent, "slack", prompt="Sign every answer with -- Helper")


@pytest.mark.django_db
def test_a_mention_runs_once_and_the_reply_is_posted_in_its_thread_then_edited(
    binding, slack, eager_celery, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = post_slack(binding, slack_event("<@U0BOT> what is the capital of France?"))
    assert response.status_code == 200, response.content

    run = Run.objects.get()
    assert (run.surface, run.exposure_id, run.user) == ("slack", binding.pk, None)
    assert run.input == "what is the capital of France?"
    assert run.status == "completed", run.error
    posted = slack.called("chat.postMessage")
    # The placeholder goes into the thread the mention starts (its ts), then it is edited.
    assert posted[0].body == {"channel": "C0815", "text": "…", "thread_ts": "1700000000.000100"}
    assert posted[0].authorization == "Bearer slack-bot-token"
    edits = slack.called("chat.update")
    assert edits and all(e.body["ts"] == "1700000000.000001" for e in edits)
    assert edits[-1].body["text"] == run.output
    message = ChannelMessage.objects.get()
    assert message.outcome == "run" and message.run == run
    assert message.reply_ids == ["1700000000.000001"]
    # The thread is a chat of its own; the channel is the room (its own memory store).
    thread = ChatThread.objects.get()
    assert thread.chat_key == "slack:T042:C0815:1700000000.000100"
    assert thread.conversation.group_chat_key == "slack:T042:C0815"


@pytest.mark.django_db
def test_the_binding_prompt_is_appended_to_the_instructions(binding, slack):
    from apps.runs.runner import assemble
    from apps.runs.services import run_create

    run = run_create(
        actor=None,
        organization=binding.organization,
        agent=binding.agent,
        input="hi",
        surface="slack",
        enqueue=False,
        exposure_id=binding.pk,
    )
    assembly = assemble(run)
    assert assembly.instructions[-1] == "Sign every answer with -- Helper"


@pytest.mark.django_db
def test_a_retried_event_is_one_run(
    binding, slack, eager_celery, django_capture_on_commit_callbacks
):
    event = slack_event("<@U0BOT> hello", event_id="EvRetry")
    with django_capture_on_commit_callbacks(execute=True):
        first = post_slack(binding, event)
    with django_capture_on_commit_callbacks(execute=True):
        again = post_slack(binding, event, HTTP_X_SLACK_RETRY_NUM="1")
    assert first.status_code == again.status_code == 200
    assert again.json()["duplicate"] is True
    assert Run.objects.count() == 1 and ChannelMessage.objects.count() == 1


@pytest.mark.django_db
@pytest.mark.parametrize(
    "how",
    ["wrong secret", "stale", "unsigned"],
)
def test_a_bad_signature_is_403_and_reaches_nothing(binding, slack, how, eager_celery):
    from django.test import Client

    event = slack_event("<@U0BOT> hello")
    if how == "wrong secret":
        response = post_slack(binding, event, secret="not-the-secret")
    elif how == "stale":
        response = post_slack(binding, event, timestamp=int(time.time()) - 6 * 60)
    else:
        response = Client().post(
            f"/channels/slack/{binding.pk}/events/", data=event, content_type="application/json"
        )
    assert response.status_code == 403
    assert not ChannelMessage.objects.exists() and not Run.objects.exists()
    assert slack.calls == []


@pytest.mark.django_db
def test_an_unknown_binding_is_the_same_403(binding):
    response = post_slack(binding, slack_event("hi"))
    assert response.status_code == 200
    binding_id = binding.pk
    binding.delete()
    from django.test import Client

    response = Client().post(
        f"/channels/slack/{binding_id}/events/", data={}, content_type="application/json"
    )
    assert response.status_code == 403


@pytest.mark.django_db
def test_url_verification_answers_its_challenge_once_signed(binding):
    challenge = {
        "type": "url_verification",
        "challenge": "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P",
    }
    response = post_slack(binding, challenge)
    assert response.json() == {"challenge": challenge["challenge"]}
    assert post_slack(binding, challenge, secret="wrong").status_code == 403


@pytest.mark.django_db
def test_the_bots_own_messages_and_plain_channel_chatter_start_nothing(
    binding, slack, eager_celery, django_capture_on_commit_callbacks
):
    own = slack_event("my answer", kind="message")
    own["event"]["bot_id"] = "B1"
    chatter = slack_event("talking among ourselves", kind="message", event_id="Ev2")
    with django_capture_on_commit_callbacks(execute=True):
        assert post_slack(binding, own).json()["ignored"] is True
        assert post_slack(binding, chatter).json()["ignored"] is True
    assert not Run.objects.exists() and slack.calls == []


@pytest.mark.django_db
def test_a_disabled_binding_answers_the_platform_and_runs_nothing(
    org, builder, binding, slack, eager_celery, django_capture_on_commit_callbacks
):
    from apps.channels.services import binding_disable

    binding_disable(actor=builder, binding=binding)
    with django_capture_on_commit_callbacks(execute=True):
        response = post_slack(binding, slack_event("<@U0BOT> hello"))
    assert response.status_code == 200 and "disabled" in response.json()["ignored"]
    assert not Run.objects.exists() and slack.calls == []


@pytest.mark.django_db
def test_a_followup_in_the_thread_continues_its_conversation(
    binding, slack, eager_celery, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        post_slack(binding, slack_event("<@U0BOT> first question"))
    with django_capture_on_commit_callbacks(execute=True):
        post_slack(
            binding,
            slack_event(
                "<@U0BOT> and a second one",
                event_id="Ev9",
                ts="1700000000.000200",
                thread_ts="1700000000.000100",
            ),
        )
    first, second = Run.objects.order_by("created_at")
    assert first.conversation_id == second.conversation_id
    assert slack.called("chat.postMessage")[-1].body["thread_ts"] == "1700000000.000100"


@pytest.mark.django_db
def test_edits_wait_for_the_platforms_interval(
    binding, slack, settings, eager_celery, django_capture_on_commit_callbacks
):
    # A long interval (counted from the placeholder's post): the text streams, but the only
    # edit is the final one.
    settings.CHANNEL_EDIT_INTERVAL_SECONDS = {"slack": 3600}
    with django_capture_on_commit_callbacks(execute=True):
        post_slack(binding, slack_event("<@U0BOT> " + "tell me a long story " * 20))
    run = Run.objects.get()
    edits = slack.called("chat.update")
    assert len(edits) == 1 and edits[0].body["text"] == run.output


@pytest.mark.django_db
def test_a_failed_run_says_so_in_the_thread(
    org, builder, slack, eager_celery, django_capture_on_commit_callbacks
):
    from decimal import Decimal

    org.monthly_budget_usd = Decimal("0")
    org.save(update_fields=["monthly_budget_usd"])
    from tests.runs.factories import published_agent

    binding = make_binding(
        org, builder, published_agent(org, name="Broke", created_by=builder), "slack"
    )
    with django_capture_on_commit_callbacks(execute=True):
        post_slack(binding, slack_event("<@U0BOT> hello"))
    run = Run.objects.get()
    assert run.status == "budget_exceeded"
    texts = slack.texts()
    assert texts[-1].startswith("The run stopped:")
    assert run.error in texts[-1]


@pytest.mark.django_db
def test_a_redelivered_task_does_not_run_or_post_again(
    binding, slack, eager_celery, django_capture_on_commit_callbacks
):
    from apps.channels.tasks import handle_message

    with django_capture_on_commit_callbacks(execute=True):
        post_slack(binding, slack_event("<@U0BOT> hello"))
    calls = len(slack.calls)
    message = ChannelMessage.objects.get()
    assert handle_message(message.pk) == "run"  # what a redelivery after the run would do
    assert len(slack.calls) == calls and Run.objects.count() == 1
