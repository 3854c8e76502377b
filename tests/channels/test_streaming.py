"""The reply follows the text as a real provider streams it: a slow OpenAI-compatible server on
127.0.0.1 sends the answer a word at a time, and the bot's message is edited along the way."""

from __future__ import annotations

import json
import time

import pytest

from apps.runs.models import Run
from apps.vault.services import secret_create
from tests.runs.factories import compatible_profile, published_agent
from tests.runs.fake_openai import FakeOpenAI

from .conftest import make_binding, post_slack, slack_event

WORDS = "One two three four five six".split()


class SlowStreamingServer(FakeOpenAI):
    """Streams a fixed answer, one word every 0.3 s."""

    def _stream(self, handler, model, message, finish, usage) -> None:
        handler.send_response(200)
        handler.send_header("content-type", "text/event-stream")
        handler.send_header("transfer-encoding", "chunked")
        handler.end_headers()

        def send(delta, finish_reason=None, usage_block=None):
            body = {
                "id": "c",
                "object": "chat.completion.chunk",
                "created": 0,
                "model": model,
                "choices": []
                if delta is None
                else [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
            }
            if usage_block:
                body["usage"] = usage_block
            data = f"data: {json.dumps(body)}\n\n".encode()
            handler.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            handler.wfile.flush()

        send({"role": "assistant", "content": ""})
        for n, word in enumerate(WORDS):
            send({"content": word if n == 0 else " " + word})
            time.sleep(0.3)
        send({}, finish_reason="stop")
        send(None, usage_block=usage)
        data = b"data: [DONE]\n\n"
        handler.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n0\r\n\r\n")
        handler.wfile.flush()


@pytest.mark.django_db
def test_the_bots_message_is_edited_as_the_words_arrive(
    org,
    owner,
    builder,
    fake,
    allow_local_model_requests,
    eager_celery,
    django_capture_on_commit_callbacks,
):
    slack = fake("slack")
    with SlowStreamingServer() as server:
        key = secret_create(
            actor=owner,
            organization=org,
            name="local key",
            purpose="openai_compatible",
            value="sk-local",
        )
        profile = compatible_profile(org, base_url=server.base_url, model_name="slow", secret=key)
        agent = published_agent(
            org, name="Streamer", created_by=builder, model_profile_id=profile.pk
        )
        binding = make_binding(org, builder, agent, "slack")
        with django_capture_on_commit_callbacks(execute=True):
            post_slack(binding, slack_event("<@U0BOT> count to six"))

    run = Run.objects.get()
    assert run.status == "completed", run.error
    assert run.output == " ".join(WORDS)
    edits = [call.body["text"] for call in slack.called("chat.update")]
    # Several edits while the words arrived, each a longer prefix of the answer, the last whole.
    assert len(edits) >= 3, edits
    assert all(run.output.startswith(text) for text in edits)
    assert [len(text) for text in edits] == sorted(len(text) for text in edits)
    assert edits[-1] == run.output
