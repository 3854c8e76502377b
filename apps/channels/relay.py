"""A run's answer, streamed into its thread by editing the bot's message as the text arrives.

While a segment of a channel's run executes (its first, or a resume after a decision), a
:class:`Relay` thread follows the run's frame stream in Redis (the same stream a browser follows,
``apps.runs.events``): it posts a placeholder at once, edits it with the text so far no more often
than the platform allows (``platforms.edit_interval``), and when the segment's ``run_finished``
frame arrives it writes the end into the thread:

- completed: the whole answer (continued in further messages past the platform's length);
- parked on a gated tool: the answer so far, then a message naming the tool and linking to the
  approvals queue (with ``org=``) — nothing in a thread can approve it (a channel never waives);
- parked on a question: the questions with numbered options, answered by replying in the thread;
- cancelled, failed, budget-stopped, blocked: a sentence saying so, after the text so far;
- every chart the segment drew (a ``tool_result`` frame carrying ``chart_svg``) follows the text
  as an image (``images.chart_png``), before any of the sentences above; a chart the platform
  refuses is said in words instead.

The relay reads Redis and calls the platform, never the database: it runs beside the runner's
own thread (in a test, inside the test's transaction), and the caller books the reply ids.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from dataclasses import dataclass, field
from typing import cast

import redis
from django.conf import settings

from apps.runs.events import stream_key

from .images import ChartUnreadable, chart_filename, chart_png, chart_title
from .platforms import PlatformError, edit_interval

logger = logging.getLogger(__name__)

PLACEHOLDER = "…"
READ_BLOCK_MS = 200

# What XREAD answers on redis-py's sync client (its stubs say only "a response"): per stream, its
# key and its (entry id, fields) pairs.
StreamReply = list[tuple[bytes, list[tuple[bytes, dict[bytes, bytes]]]]]
# How long the caller waits for the relay to write the end once the segment returned.
JOIN_SECONDS = 30.0

ENDINGS = {
    "cancelled": "The run was cancelled.",
    "budget_exceeded": "The run stopped: {error}",
    "guardrail_blocked": "The run was stopped by a guardrail: {error}",
    "failed": "The run failed: {error}",
}


@dataclass
class RelayResult:
    reply_ids: list[str] = field(default_factory=list)
    status: str | None = None
    text: str = ""


def ending_sentence(status: str, error: str) -> str | None:
    template = ENDINGS.get(status)
    if template is None:
        return None
    return template.format(error=error or "no reason was recorded.")


def approval_sentence(frames: list[dict], queue_link: str) -> str:
    tools = ", ".join(sorted({f"`{frame['tool_name']}`" for frame in frames}))
    return (
        f"Waiting for approval: the agent wants to call {tools}. A person with approvals:decide "
        f"decides it in the approvals queue: {queue_link} — nothing in this thread can approve "
        "it. The answer continues here once it is decided."
    )


def question_text(frames: list[dict]) -> str:
    lines = ["The agent asks:"]
    questions = [q for frame in frames for q in frame.get("questions") or []]
    for number, question in enumerate(questions, start=1):
        prefix = f"{number}. " if len(questions) > 1 else ""
        lines.append(f"{prefix}{question.get('header', '')}: {question.get('question', '')}")
        for index, option in enumerate(question.get("options") or [], start=1):
            description = option.get("description")
            lines.append(
                f"   {index}) {option.get('label', '')}"
                + (f" — {description}" if description else "")
            )
    lines.append(
        "Reply in this thread with the number of your choice (several numbers, comma-separated, "
        "where more than one may be chosen), or with your own answer"
        + ("; separate the answers to each question with ';'." if len(questions) > 1 else ".")
    )
    return "\n".join(lines)


def chunks(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


class Relay(threading.Thread):
    """Follows one segment of a run and mirrors it into the thread (see the module docstring)."""

    def __init__(self, client, target: dict, run_id: int, *, after_seq: int, queue_link: str):
        super().__init__(name=f"channel-relay-{run_id}", daemon=True)
        self.client = client
        self.target = target
        self.run_id = run_id
        self.after_seq = after_seq
        self.queue_link = queue_link
        self.interval = edit_interval(client.platform)
        self.result = RelayResult()
        self._stopping = threading.Event()
        self._posted_at = 0.0
        self._redis = redis.Redis.from_url(settings.REDIS_URL)

    # --- the caller's side ---------------------------------------------------------------

    def open(self) -> None:
        """Post the placeholder (on the caller's thread, so a refused post is seen there), then
        follow the stream."""
        self.result.reply_ids.append(self.client.post(self.target, PLACEHOLDER))
        self._posted_at = time.monotonic()
        self.start()

    def close(self) -> RelayResult:
        """The segment returned: let the relay drain what is left, write the end, and stop."""
        self._stopping.set()
        self.join(JOIN_SECONDS)
        return self.result

    # --- the relay thread ----------------------------------------------------------------

    def run(self) -> None:
        try:
            self._follow()
        except Exception:  # the run goes on; the thread is what could not be told
            logger.exception("run %s: relaying to the channel failed", self.run_id)
        finally:
            self._redis.close()

    def _follow(self) -> None:
        last = f"{self.after_seq}-0"
        # The placeholder was a write too: the platform's interval counts from it.
        text, shown, last_edit = "", PLACEHOLDER, self._posted_at
        approvals: list[dict] = []
        questions: list[dict] = []
        # The charts in the order the model asked for them: two drawn at once finish in either order.
        calls: list[str] = []
        charts: list[tuple[int, str]] = []
        finished: dict | None = None
        key = stream_key(self.run_id)
        while finished is None:
            entries = cast(
                StreamReply | None,
                self._redis.xread({key: last}, block=READ_BLOCK_MS, count=200),
            )
            frames = []
            for _, items in entries or []:
                for entry_id, fields in items:
                    last = entry_id.decode() if isinstance(entry_id, bytes) else entry_id
                    frames.append(json.loads(fields[b"frame"]))
            for frame in frames:
                kind = frame.get("type")
                if kind == "text_delta":
                    text += frame.get("delta", "")
                elif kind == "tool_approval_required":
                    approvals.append(frame)
                elif kind == "question":
                    questions.append(frame)
                elif kind == "tool_call":
                    calls.append(frame.get("tool_call_id", ""))
                elif kind == "tool_result" and frame.get("chart_svg"):
                    call_id = frame.get("tool_call_id", "")
                    asked = calls.index(call_id) if call_id in calls else len(calls)
                    charts.append((asked, frame["chart_svg"]))
                elif kind == "run_finished":
                    finished = frame
            if (
                finished is None
                and text
                and text != shown
                and time.monotonic() - last_edit >= self.interval
            ):
                shown = self._edit_streaming(text)
                last_edit = time.monotonic()
            if not frames and finished is None and self._stopping.is_set():
                break  # the segment returned without an end frame (it was never claimed)
        ordered = [svg for _, svg in sorted(charts, key=lambda chart: chart[0])]
        self._write_end(text, finished, approvals, questions, ordered)

    def _edit_streaming(self, text: str) -> str:
        limit = self.client.max_chars
        shown = text if len(text) <= limit else text[: limit - 1] + "…"
        try:
            self.client.edit(self.target, self.result.reply_ids[0], shown)
        except PlatformError as exc:
            logger.info("run %s: an edit was refused: %s", self.run_id, exc.sentence)
        return shown

    def _write_end(self, text, finished, approvals, questions, charts) -> None:
        status = (finished or {}).get("status")
        self.result.status, self.result.text = status, text
        parts = chunks(text, self.client.max_chars) if text else []
        ending = ending_sentence(status or "", (finished or {}).get("error", ""))
        if not parts:
            if charts:
                parts = ["(The chart follows.)" if len(charts) == 1 else "(The charts follow.)"]
            elif status == "completed":
                parts = ["(The agent gave no answer.)"]
            elif ending and not approvals and not questions:
                parts, ending = [ending], None
            elif approvals or questions:
                parts = ["(Paused.)"]
            elif finished is None:
                parts = ["The run did not start."]
        first, *rest = parts or [PLACEHOLDER]
        self.client.edit(self.target, self.result.reply_ids[0], first)
        for part in rest:
            self.result.reply_ids.append(self.client.post(self.target, part))
        for svg in charts:
            self._send_chart(svg)
        if ending:
            self.result.reply_ids.append(self.client.post(self.target, ending))
        if approvals:
            message = approval_sentence(approvals, self.queue_link)
            self.result.reply_ids.append(self.client.post(self.target, message))
        if questions:
            self.result.reply_ids.append(self.client.post(self.target, question_text(questions)))

    def _send_chart(self, svg: str) -> None:
        title = chart_title(svg)
        try:
            image = chart_png(svg)
            sent = self.client.send_image(
                self.target, image, title=title, filename=chart_filename(title)
            )
        except (ChartUnreadable, PlatformError) as exc:
            # The answer's text already went out: the chart's absence is said, not left silent.
            logger.info("run %s: a chart was not sent: %s", self.run_id, exc.sentence)
            sent = self.client.post(
                self.target, f"The chart “{title}” could not be sent here: {exc.sentence}."
            )
        self.result.reply_ids.append(sent)
