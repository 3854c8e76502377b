"""Typed run frames and where they go: a Redis stream per run, in order, with a `seq` each.

A websocket consumer replays ``frames_after(run_id, after=SEQ)`` and then follows the stream
(XREAD BLOCK), so a client that reconnects receives only what came after it, and one that
connects after the run ended still receives the whole stream and the terminal frame.
"""

from __future__ import annotations

import json
from typing import Literal, TypedDict

import redis
from django.conf import settings

FRAME_RETENTION_SECONDS = 7 * 24 * 3600


class RunStartedFrame(TypedDict):
    type: Literal["run_started"]
    model_label: str


class TextDeltaFrame(TypedDict):
    type: Literal["text_delta"]
    delta: str


class ThinkingDeltaFrame(TypedDict):
    type: Literal["thinking_delta"]
    delta: str


class ToolCallFrame(TypedDict):
    type: Literal["tool_call"]
    tool_name: str
    tool_call_id: str
    args: str


class ToolResultFrame(TypedDict):
    type: Literal["tool_result"]
    tool_name: str
    tool_call_id: str
    content: str


class CostFrame(TypedDict):
    type: Literal["cost"]
    request: int
    input_tokens: int
    output_tokens: int
    cost_usd: str
    cost_is_partial: bool


class RunFinishedFrame(TypedDict):
    type: Literal["run_finished"]
    status: str
    cost_usd: str
    cost_is_partial: bool
    error: str


def _stream_key(run_id: int) -> str:
    return f"agenticos:run:{run_id}:frames"


_client: redis.Redis | None = None


def _redis() -> redis.Redis:
    global _client
    if _client is None:
        _client = redis.Redis.from_url(settings.REDIS_URL)
    return _client


class FramePublisher:
    """Appends one run's frames, numbering them. One writer per run at a time (its worker)."""

    def __init__(self, run_id: int) -> None:
        self.run_id = run_id
        self.key = _stream_key(run_id)
        self.client = _redis()
        # A resumed run continues the numbering of its earlier segment.
        self.seq = int(self.client.xlen(self.key))

    def send(self, frame: dict) -> None:
        self.seq += 1
        payload = {**frame, "seq": self.seq, "run_id": self.run_id}
        self.client.xadd(self.key, {"frame": json.dumps(payload, default=str)})

    def close(self) -> None:
        self.client.expire(self.key, FRAME_RETENTION_SECONDS)


def frames_after(run_id: int, after: int = 0) -> list[dict]:
    """The run's frames with seq > after, in order."""
    entries = _redis().xrange(_stream_key(run_id))
    frames = [json.loads(fields[b"frame"]) for _, fields in entries]
    return [frame for frame in frames if frame["seq"] > after]


def reset_frames(run_id: int) -> None:
    """Drop any stream left under this id (a database recreated with its sequences reset)."""
    _redis().delete(_stream_key(run_id))
