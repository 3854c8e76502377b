"""Typed run frames and where they go: a Redis stream per run, in order, with a `seq` each.

A websocket consumer replays ``frames_after(run_id, after=SEQ)`` and then follows the stream
(XREAD BLOCK), so a client that reconnects receives only what came after it, and one that
connects after the run ended still receives the whole stream and the terminal frame.
"""

from __future__ import annotations

import json
import threading
import weakref
from collections import deque
from collections.abc import Mapping
from typing import Any, Literal, TypedDict, cast

import redis
from django.conf import settings

from agenticos.outage import run_redis_options

FRAME_RETENTION_SECONDS = 7 * 24 * 3600
# A run's stream keeps at most about this many frames (MAXLEN ~): a runaway run cannot fill
# Redis. The terminal frame is always the newest, so it is never the one trimmed.
FRAME_STREAM_MAXLEN = 10_000
# A publisher reads the replies that already arrived once this many frames await theirs: the
# check costs a system call, which on every send was a sizeable share of a frame's cost.
REPLIES_READ_EVERY = 32

# What a publisher sends: one of the TypedDicts below (a TypedDict is a Mapping, not a dict).
Frame = Mapping[str, Any]
# A stream entry as redis-py's synchronous client returns it: (entry id, fields).
StreamEntry = tuple[bytes, dict[bytes, bytes]]


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


class SourceCard(TypedDict):
    url: str
    title: str
    host: str


class _ToolResultFields(TypedDict):
    type: Literal["tool_result"]
    tool_name: str
    tool_call_id: str
    content: str


class ToolResultFrame(_ToolResultFields, total=False):
    # A create_chart result: the chart drawn as escaped SVG, inserted by the browser as is.
    chart_svg: str
    # A page web_fetch read, or the results web_search found (apps.capabilities.tools.sources).
    sources: list[SourceCard]


class CostFrame(TypedDict):
    type: Literal["cost"]
    request: int
    input_tokens: int
    output_tokens: int
    cost_usd: str
    cost_is_partial: bool


class ContextUsageFrame(TypedDict, total=False):
    """The provider's input tokens of the latest request; ``window``/``ratio`` only when known."""

    type: Literal["context_usage"]
    input_tokens: int
    window: int
    ratio: float


class _CompactionFields(TypedDict):
    type: Literal["compaction"]
    # started / finished: a summary is being written; skipped: the setting cannot work (the
    # instructions and tool schemas alone are above the trigger), said once per run.
    phase: Literal["started", "finished", "skipped"]
    strategy: str


class CompactionFrame(_CompactionFields, total=False):
    messages: int
    context_tokens: int
    window_tokens: int
    trigger_tokens: int
    overhead_tokens: int
    summary_input_tokens: int
    summary_output_tokens: int


class ToolApprovalRequiredFrame(TypedDict):
    """A gated call parked its run; the person decides it by ``approval_id``."""

    type: Literal["tool_approval_required"]
    approval_id: int
    tool_call_id: str
    tool_name: str
    args: dict
    # The delegate making the call, when a gated call inside a delegation parked the run:
    # {"name", "task_id", "agent_id"} (agent_id None for an inline specialist).
    delegate: dict | None


class QuestionFrame(TypedDict):
    """The agent asked the person (``ask_user_question``); they answer by ``question_id``."""

    type: Literal["question"]
    question_id: int
    tool_call_id: str
    questions: list
    # The delegate asking, when a sync delegate asked through the run's own channel
    # (allow_questions): {"name", "task_id", "agent_id"}; None for the run's own agent.
    delegate: dict | None


# --- delegation (apps/runs/delegation.py) -----------------------------------------------------
# Every subagent_* frame carries the delegation's ``task_id`` and, when it runs under another
# delegation, that one's (``parent_task_id``), so a client nests the panels.


class _SubagentStartedFields(TypedDict):
    type: Literal["subagent_started"]
    task_id: str
    parent_task_id: str
    name: str
    mode: Literal["sync", "async"]
    description: str
    # "published" (a pinned agent), "inline" (a specialist defined inside the agent) or
    # "dynamic" (one the model wrote with create_agent / delegate).
    kind: Literal["published", "inline", "dynamic"]


class SubagentStartedFrame(_SubagentStartedFields, total=False):
    agent_id: int
    # An inline or written specialist's definition (instructions, model profile), so the panel
    # can offer to keep it as a draft agent while the run is on screen.
    definition: dict
    # The delegation continues where it parked (an approval inside it was decided).
    resumed: bool


class SubagentTextDeltaFrame(TypedDict):
    type: Literal["subagent_text_delta"]
    task_id: str
    delta: str


class SubagentToolCallFrame(TypedDict):
    type: Literal["subagent_tool_call"]
    task_id: str
    tool_name: str
    tool_call_id: str
    args: str


class SubagentToolResultFrame(TypedDict):
    type: Literal["subagent_tool_result"]
    task_id: str
    tool_name: str
    tool_call_id: str
    content: str


class SubagentParkedFrame(TypedDict):
    """A gated call inside a sync delegation parked the whole run."""

    type: Literal["subagent_parked"]
    task_id: str
    cost_usd: str


class SubagentFinishedFrame(TypedDict):
    """A delegation ended (its row, for a published delegate, follows in subagent_recorded)."""

    type: Literal["subagent_finished"]
    task_id: str
    status: str
    # The delegation's own entries of the run's one ledger (its own requests, priced once).
    cost_usd: str
    cost_is_partial: bool
    error: str


class SubagentRecordedFrame(TypedDict):
    """A published delegation's row was written (when the run's segment is booked): its run id,
    which the panel links to (Activity ``?run=``)."""

    type: Literal["subagent_recorded"]
    task_id: str
    run_id: int


class _RunFinishedFields(TypedDict):
    type: Literal["run_finished"]
    status: str
    cost_usd: str
    cost_is_partial: bool
    error: str


class RunFinishedFrame(_RunFinishedFields, total=False):
    # Set when the frame was rebuilt from the row (the run's stream expired).
    run_id: int
    replayed_from: str


def _prefix() -> str:
    # The test settings give each pytest process its own prefix: run ids restart at 1 in every
    # test database, and two suites sharing one Redis must not read each other's frames.
    return getattr(settings, "RUN_FRAMES_KEY_PREFIX", "agenticos")


def _stream_key(run_id: int) -> str:
    return f"{_prefix()}:run:{run_id}:frames"


def _conversation_key(conversation_id: int) -> str:
    return f"{_prefix()}:conversation:{conversation_id}:runs"


def stream_key(run_id: int) -> str:
    """The Redis stream of one run's frames; entry ids are ``{seq}-0`` so a reader can XREAD
    straight after the last sequence it saw."""
    return _stream_key(run_id)


def conversation_key(conversation_id: int) -> str:
    """The Redis stream announcing each run of a conversation (entry field ``run_id``)."""
    return _conversation_key(conversation_id)


_client: redis.Redis | None = None
_publisher_client: redis.Redis | None = None


def _redis() -> redis.Redis:
    global _client
    if _client is None:
        _client = redis.Redis.from_url(settings.REDIS_URL)
    return _client


def _publisher_redis() -> redis.Redis:
    """The client a run's frames are written through: it retries over a Redis restart
    (agenticos/outage.py) so a restart does not fail the runs in flight."""
    global _publisher_client
    if _publisher_client is None:
        _publisher_client = redis.Redis.from_url(settings.REDIS_URL, **run_redis_options())
    return _publisher_client


# Publishers' own connections, kept for the next run once one has read every reply: a worker
# holding hundreds of runs would otherwise open (and greet) a Redis connection per run.
_idle_connections: list = []
_idle_lock = threading.Lock()
IDLE_CONNECTIONS_KEPT = 64


def _borrow_connection(client: redis.Redis):
    with _idle_lock:
        if _idle_connections:
            return _idle_connections.pop()
    pool = client.connection_pool
    connection = pool.connection_class(**pool.connection_kwargs)
    connection.connect()
    return connection


def _give_back(connection) -> None:
    with _idle_lock:
        if len(_idle_connections) < IDLE_CONNECTIONS_KEPT:
            _idle_connections.append(connection)
            return
    connection.disconnect()


class FramePublisher:
    """Appends one run's frames, numbering them. One writer per run at a time (its worker).

    A send writes its XADD on the publisher's own Redis connection and returns without waiting for
    the reply: the frame is on its way to Redis (and to the followers blocked in XREAD) at once,
    and the worker pays one socket write per send instead of a round trip. Replies are read
    later — those already arrived once ``REPLIES_READ_EVERY`` frames await theirs, all of them in
    ``flush()`` and ``close()`` — so a frame Redis refuses is still an error, raised by the send or
    flush that reads its reply. Redis handles one connection's commands in order, so frames are
    stored in ``seq`` order.

    Contract: a frame is stored once ``flush()`` or ``close()`` returned. Code that reads the
    stream on another connection right after sending (a test; a resumed segment's publisher)
    flushes first: another connection's read is not ordered after this one's unacknowledged writes.
    """

    def __init__(self, run_id: int, *, fresh: bool = False) -> None:
        """``fresh``: the run's first segment, whose stream its creation emptied
        (``announce_run``) and nothing but this publisher writes: numbered from 1 unread."""
        self.run_id = run_id
        self.key = _stream_key(run_id)
        self.client = _publisher_redis()
        # A resumed run continues the numbering of its earlier segment (from the newest entry,
        # not the length: the stream is capped, so its length stops counting frames).
        newest = None if fresh else self.client.xrevrange(self.key, count=1)
        self.seq = _seq_of(newest[0][0]) if newest else 0
        self._connection = _borrow_connection(self.client)
        # A publisher dropped without close() takes its connection with it.
        self._dropped = weakref.finalize(self, self._connection.disconnect)
        # Frames written whose reply is not read yet, oldest first: (seq, payload).
        self._unacknowledged: deque[tuple[int, str]] = deque()
        # Frames numbered but not written yet (``hold``), oldest first.
        self._held: list[tuple[int, str]] = []

    def hold(self, *frames: Frame) -> None:
        """Number ``frames`` now and write them with the next send, or at ``release()``: frames
        nobody waits on to the millisecond (a gauge, a call just starting) ride along with the
        next write instead of costing a write of their own."""
        self._held.extend(self._numbered(frames))

    @property
    def holding(self) -> bool:
        return bool(self._held)

    def send(self, *frames: Frame) -> None:
        """Write the held frames and ``frames``, numbered in that order, in one socket write."""
        held, self._held = self._held, []
        self._write([*held, *self._numbered(frames)])

    def release(self) -> None:
        """Write the held frames now."""
        if self._held:
            self.send()

    def flush(self) -> None:
        """Wait until Redis has stored every frame sent or held so far (or raise the error it answered)."""
        self.release()
        self._read_replies(wait=True)

    def _numbered(self, frames) -> list[tuple[int, str]]:
        numbered = []
        for frame in frames:
            self.seq += 1
            numbered.append(
                (
                    self.seq,
                    json.dumps({**frame, "seq": self.seq, "run_id": self.run_id}, default=str),
                )
            )
        return numbered

    def _write(self, entries: list[tuple[int, str]]) -> None:
        if len(self._unacknowledged) >= REPLIES_READ_EVERY:
            self._read_replies(wait=False)
        self._unacknowledged.extend(entries)
        try:
            self._connection.send_packed_command(
                [self._packed_xadd(seq, payload) for seq, payload in entries], check_health=False
            )
        except (redis.ConnectionError, redis.TimeoutError):
            self._rewrite_unacknowledged()

    def close(self) -> None:
        try:
            self.flush()
        except BaseException:
            self._dropped()  # replies may still be on their way: this connection is done
            raise
        # Every reply read: the connection is clean for the next run's publisher.
        self._dropped.detach()
        _give_back(self._connection)
        self.client.expire(self.key, FRAME_RETENTION_SECONDS)

    def _xadd(self, seq: int, payload: str) -> tuple:
        return ("XADD", self.key, "MAXLEN", "~", FRAME_STREAM_MAXLEN, f"{seq}-0", "frame", payload)

    def _packed_xadd(self, seq: int, payload: str) -> bytes:
        # The same command as _xadd in Redis's wire format (RESP), encoded directly: redis-py's
        # generic packer costs more than the socket write it prepares.
        parts = [
            arg if isinstance(arg, bytes) else str(arg).encode() for arg in self._xadd(seq, payload)
        ]
        return b"".join(
            [b"*%d\r\n" % len(parts), *(b"$%d\r\n%s\r\n" % (len(part), part) for part in parts)]
        )

    def _read_replies(self, *, wait: bool) -> None:
        try:
            while self._unacknowledged and (wait or self._connection.can_read(timeout=0)):
                try:
                    self._connection.read_response()
                except redis.ResponseError:
                    # An error reply is this frame's own refusal: raised, and not written again.
                    self._unacknowledged.popleft()
                    raise
                self._unacknowledged.popleft()
        except (redis.ConnectionError, redis.TimeoutError):
            self._rewrite_unacknowledged()

    def _rewrite_unacknowledged(self) -> None:
        """The connection broke with frames whose fate is unknown: write them again through the
        client (which reconnects and retries). Redis stores a connection's commands in order, so
        the frames it already has are the oldest ones, and their second XADD is refused as not
        newer than the stream's top — the only refusal expected here."""
        self._connection.disconnect()  # the next send reconnects it
        while self._unacknowledged:
            seq, payload = self._unacknowledged[0]
            try:
                self.client.execute_command(*self._xadd(seq, payload))
            except redis.ResponseError as exc:
                if "equal or smaller" not in str(exc):
                    raise
            self._unacknowledged.popleft()


def _seq_of(entry_id) -> int:
    if isinstance(entry_id, bytes):
        entry_id = entry_id.decode()
    return int(str(entry_id).split("-", 1)[0])


def frames_after(run_id: int, after: int = 0) -> list[dict]:
    """The run's frames with seq > after, in order."""
    entries = cast(list[StreamEntry], _redis().xrange(_stream_key(run_id), min=f"{after + 1}-0"))
    frames = [json.loads(fields[b"frame"]) for _, fields in entries]
    return [frame for frame in frames if frame["seq"] > after]


def newest_seq(run_id: int) -> int:
    """The seq of the run's newest frame (0 before the first): a page that drew the run from the
    database follows its frames from there."""
    newest = _redis().xrevrange(_stream_key(run_id), count=1)
    return _seq_of(newest[0][0]) if newest else 0


def announce_run(conversation_id: int, run_id: int) -> None:
    """A new run: any stream left under its id dropped (``reset_frames``), and its conversation's
    followers told it started (they then follow its frames) — one round trip to Redis."""
    key = _conversation_key(conversation_id)
    pipeline = _redis().pipeline(transaction=False)
    pipeline.delete(_stream_key(run_id))
    pipeline.xadd(key, {"run_id": str(run_id)}, maxlen=1_000, approximate=True)
    pipeline.expire(key, FRAME_RETENTION_SECONDS)
    pipeline.execute()


def reset_frames(run_id: int) -> None:
    """Drop any stream left under this id (a database recreated with its sequences reset)."""
    _redis().delete(_stream_key(run_id))
