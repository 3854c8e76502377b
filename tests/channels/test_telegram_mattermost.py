"""Telegram and Mattermost end to end, each against a fake of its API on 127.0.0.1."""

from __future__ import annotations

import pytest

from apps.channels.models import ChannelMessage, ChatThread
from apps.runs.models import Run

from .conftest import make_binding, mattermost_post, post_mattermost, post_telegram, telegram_update


@pytest.mark.django_db
def test_a_telegram_message_runs_once_and_the_reply_is_edited_in_place(
    org, builder, agent, fake, eager_celery, django_capture_on_commit_callbacks
):
    telegram = fake("telegram")
    binding = make_binding(org, builder, agent, "telegram")
    with django_capture_on_commit_callbacks(execute=True):
        response = post_telegram(binding, telegram_update("What is 2 + 2?", update_id=500))
    assert response.status_code == 200, response.content
    with django_capture_on_commit_callbacks(execute=True):
        again = post_telegram(binding, telegram_update("What is 2 + 2?", update_id=500))
    assert again.json()["duplicate"] is True

    run = Run.objects.get()
    assert (run.surface, run.exposure_id, run.status) == ("telegram", binding.pk, "completed")
    sent = telegram.called("sendMessage")
    assert sent[0].path == "/bottelegram-bot-token/sendMessage"
    assert sent[0].body == {"chat_id": 42, "text": "…"}  # a private chat: no reply_to
    edits = telegram.called("editMessageText")
    assert edits and edits[-1].body == {"chat_id": 42, "message_id": 1001, "text": run.output}
    # A private chat is one-to-one: no room key on its conversation.
    assert ChatThread.objects.get().conversation.group_chat_key == ""


@pytest.mark.django_db
def test_a_telegram_group_reply_answers_the_message_it_was_asked_in(
    org, builder, agent, fake, eager_celery, django_capture_on_commit_callbacks
):
    telegram = fake("telegram")
    binding = make_binding(org, builder, agent, "telegram")
    update = telegram_update(
        "@helper_bot status?", chat_id=-100, chat_type="supergroup", message_id=33
    )
    with django_capture_on_commit_callbacks(execute=True):
        post_telegram(binding, update)
    assert Run.objects.get().input == "status?"
    assert telegram.called("sendMessage")[0].body == {
        "chat_id": -100,
        "text": "…",
        "reply_to_message_id": 33,
    }
    assert ChatThread.objects.get().conversation.group_chat_key == "telegram:-100"


@pytest.mark.django_db
def test_a_wrong_telegram_secret_token_is_403_and_runs_nothing(org, builder, agent, fake):
    telegram = fake("telegram")
    binding = make_binding(org, builder, agent, "telegram")
    assert post_telegram(binding, telegram_update("hi"), secret="guess").status_code == 403
    assert post_telegram(binding, telegram_update("hi"), secret="").status_code == 403
    assert not ChannelMessage.objects.exists() and telegram.calls == []


@pytest.fixture
def mattermost(fake):
    return fake("mattermost")


@pytest.fixture
def mm_binding(org, builder, agent, mattermost):
    return make_binding(org, builder, agent, "mattermost", server_url=mattermost.url)


@pytest.mark.django_db
@pytest.mark.parametrize("form", [False, True])
def test_a_mattermost_trigger_runs_once_and_the_reply_is_patched_in_its_thread(
    mm_binding, mattermost, form, eager_celery, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = post_mattermost(mm_binding, mattermost_post("what changed today?"), form=form)
    assert response.status_code == 200, response.content
    with django_capture_on_commit_callbacks(execute=True):
        again = post_mattermost(mm_binding, mattermost_post("what changed today?"), form=form)
    assert again.json()["duplicate"] is True

    run = Run.objects.get()
    assert (run.surface, run.exposure_id, run.input) == (
        "mattermost",
        mm_binding.pk,
        "what changed today?",
    )
    posted = mattermost.called("POST /posts")
    assert posted[0].body == {"channel_id": "chan1", "message": "…", "root_id": "p1"}
    assert posted[0].authorization == "Bearer mattermost-bot-token"
    patches = [c for c in mattermost.calls if c.method == "PUT"]
    assert patches and patches[-1].path == "/api/v4/posts/post1/patch"
    assert patches[-1].body == {"message": run.output}
    assert ChatThread.objects.get().conversation.group_chat_key == "mattermost:team1:chan1"


@pytest.mark.django_db
def test_a_wrong_mattermost_token_is_403_and_runs_nothing(mm_binding, mattermost):
    assert post_mattermost(mm_binding, mattermost_post("hi", token="guess")).status_code == 403
    payload = mattermost_post("hi")
    del payload["token"]
    assert post_mattermost(mm_binding, payload).status_code == 403
    assert not ChannelMessage.objects.exists() and mattermost.calls == []
