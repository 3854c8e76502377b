"""The relay on its own: a run's frames in Redis (written by the runs app's own publisher) to
a fake platform — how each ending is said in the thread, and a long answer continued."""

from __future__ import annotations

import pytest

from apps.channels.platforms import SlackClient
from apps.channels.relay import Relay
from apps.runs.events import FramePublisher, reset_frames

RUN_ID = 987_654


@pytest.fixture
def slack(fake):
    server = fake("slack")
    reset_frames(RUN_ID)
    yield server
    reset_frames(RUN_ID)


def relay_of(frames):
    publisher = FramePublisher(RUN_ID)
    relay = Relay(
        SlackClient("xoxb"),
        {"channel": "C1", "thread_ts": "1.0"},
        RUN_ID,
        after_seq=0,
        queue_link="https://q.test/runs?tab=approvals&org=1",
    )
    relay.open()
    publisher.send(*frames)
    publisher.close()
    return relay.close()


def finished(status, error=""):
    return {
        "type": "run_finished",
        "status": status,
        "cost_usd": "0",
        "cost_is_partial": False,
        "error": error,
    }


@pytest.mark.parametrize(
    ("status", "error", "said"),
    [
        ("cancelled", "", "The run was cancelled."),
        (
            "failed",
            "The model provider did not answer.",
            "The run failed: The model provider did not answer.",
        ),
        (
            "budget_exceeded",
            "The agent's monthly budget is spent.",
            "The run stopped: The agent's monthly budget is spent.",
        ),
        (
            "guardrail_blocked",
            "A blocked word.",
            "The run was stopped by a guardrail: A blocked word.",
        ),
    ],
)
def test_an_ending_is_said_in_the_thread_after_the_text_so_far(
    slack, settings, status, error, said
):
    result = relay_of(
        [
            {"type": "text_delta", "delta": "Half an "},
            {"type": "text_delta", "delta": "answer"},
            finished(status, error),
        ]
    )
    assert result.status == status
    assert slack.texts()[-2:] == ["Half an answer", said]


def test_an_ending_with_no_text_replaces_the_placeholder(slack):
    relay_of([finished("cancelled")])
    assert slack.texts() == ["…", "The run was cancelled."]
    assert slack.called("chat.update")[0].body["text"] == "The run was cancelled."


def test_a_long_answer_is_continued_in_further_messages(slack):
    text = "x" * 9000
    result = relay_of([{"type": "text_delta", "delta": text}, finished("completed")])
    posted = [c.body["text"] for c in slack.called("chat.postMessage")]
    assert (
        posted[0] == "…"
        and "".join([slack.called("chat.update")[-1].body["text"], *posted[1:]]) == text
    )
    assert len(result.reply_ids) == 3


def test_a_parked_question_lists_its_options(slack):
    question = {
        "type": "question",
        "question_id": 1,
        "tool_call_id": "c1",
        "questions": [
            {
                "header": "Plan",
                "question": "Which plan?",
                "options": [
                    {"label": "Basic", "description": "cheap"},
                    {"label": "Pro", "description": "fast"},
                ],
            }
        ],
    }
    relay_of([question, finished("awaiting_answer")])
    card = slack.texts()[-1]
    assert "Plan: Which plan?" in card and "1) Basic — cheap" in card and "2) Pro — fast" in card
