"""Run frames to websocket clients: `/ws/runs/{id}/` and `/ws/conversations/{id}/`.

An edge (STYLE.md): it parses the URL, asks the selectors whether the caller may follow, and
relays the frames the worker already wrote to the run's Redis stream (apps/runs/events.py).
Whether the caller may still follow is asked on connect and again between every two sends (one
query, see AccessCheck), so a person removed from the organization, demoted, or whose API key
was revoked stops receiving frames at the next send rather than at the next connect.

Frames are the worker's JSON, relayed as written: ``type``, ``seq`` (per run) and ``run_id``.
``?after=SEQ`` resumes after the last sequence the client saw — frames written while it was away
included, because the stream is the record, not a broadcast. A client that connects after the run
ended receives the whole stream and the terminal frame. On the conversation socket, frames of
every run of the conversation arrive in turn; ``?after_run=RUN&after=SEQ`` resumes there.

Close codes: 4401 not signed in, 4404 nothing to follow here (a missing run and another
organization's run read the same), 4403 access lost mid-stream, 4422 a malformed cursor,
1000 the run ended.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import cast
from urllib.parse import parse_qs

import psycopg
import redis.asyncio as aioredis
from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings
from django.db import InterfaceError, OperationalError
from django.db import connection as db_connection
from psycopg.types.numeric import Int8

from agenticos import params as parsing
from apps.orgs.middleware import SESSION_KEY
from apps.orgs.selectors import default_organization_for_user, organization_for_user

from . import selectors
from .choices import TERMINAL_STATUSES
from .events import StreamEntry, conversation_key, stream_key
from .selectors import CONVERSATION_FOLLOWABLE_SQL, RUN_FOLLOWABLE_SQL, VIEWING_ROLES

logger = logging.getLogger(__name__)

# How long one XREAD waits before the consumer looks at the run row (a finished run whose stream
# expired, a cursor already past the terminal frame).
BLOCK_MS = 5_000
BATCH = 500

CLOSE_UNAUTHENTICATED = 4401
CLOSE_FORBIDDEN = 4403
CLOSE_NOT_FOUND = 4404
CLOSE_BAD_CURSOR = 4422


class BadCursor(ValueError):
    pass


def _cursor(query: dict, name: str) -> int | None:
    values = query.get(name)
    if not values or values[-1] == "":
        return None
    value = parsing.parse_int(name, values[-1], {}, minimum=0)
    if value is None:
        raise BadCursor(name)
    return value


@database_sync_to_async
def _organization_for(scope):
    """The key's organization for an API key; the console's current organization for a session."""
    user = scope.get("user")
    if user is None or not user.is_authenticated:
        return None
    if scope.get("api_key_organization") is not None:
        return scope["api_key_organization"]
    session = scope.get("session")
    organization = organization_for_user(
        user, session.get(SESSION_KEY) if session is not None else None
    )
    return organization or default_organization_for_user(user)


def _check(fn, /, *args, **kwargs) -> bool:
    """Run an access check on the access thread's database connection, kept open between sends.

    ``database_sync_to_async`` closes and reopens the connection around every call (CONN_MAX_AGE
    is 0): a new PostgreSQL connection before every batch of frames costs tens of milliseconds.
    A connection that went away is closed and the check asked once more on a new one.
    """
    try:
        return fn(*args, **kwargs)
    except (OperationalError, InterfaceError, psycopg.OperationalError, psycopg.InterfaceError):
        db_connection.close()
        return fn(*args, **kwargs)


# --- the re-check between sends: the prepared-SQL twin of the selector -------------------------
# (RUN_FOLLOWABLE_SQL and CONVERSATION_FOLLOWABLE_SQL live in selectors.py beside the ORM form.)
# A psycopg prepare threshold no statement reaches: prepare only what asks for it.
PREPARE_ONLY_WHEN_ASKED = 2**31 - 1


def still_followable(
    sql: str, *, user_id: int, organization_id: int, subject_id: int, api_key_id: int | None
) -> bool:
    """Ask one of the statements above on this thread's connection, prepared server-side once per
    connection (psycopg's ``prepare=True`` with server-side binding), in autocommit: every answer
    reads what was committed when it was asked."""
    db_connection.ensure_connection()
    raw = db_connection.connection
    if raw.prepare_threshold is None:
        # Django turns psycopg's preparation off (which also ignores prepare=True): prepare only
        # what asks for it (Django's own cursors bind client-side and are never prepared).
        raw.prepare_threshold = PREPARE_ONLY_WHEN_ASKED
    with psycopg.Cursor(raw) as cursor:
        cursor.execute(
            sql,
            {
                "user": Int8(user_id),
                "organization": Int8(organization_id),
                "subject": Int8(subject_id),
                "api_key": None if api_key_id is None else Int8(api_key_id),
                "viewing_roles": VIEWING_ROLES,
            },
            prepare=True,
        )
        row = cursor.fetchone()
        return row is not None and bool(row[0])


# Every access check of this process runs on one thread, so on one database connection that stays
# open while any socket follows frames: a socket's first check after connect (and every later one)
# is one query on a warm connection, never a new connection in a fresh pool thread (which cost a
# socket's first frame 30-60 ms). The connection is closed when the last socket leaves, so an idle
# server holds none. One thread answers ~1,000 checks a second; a socket asks a few a second.
_access_executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="frames-access")
_checked = sync_to_async(_check, thread_sensitive=False, executor=_access_executor)
_followers_lock = threading.Lock()
_followers = 0


def _follower_joined() -> None:
    global _followers
    with _followers_lock:
        _followers += 1


def _follower_left() -> None:
    global _followers
    with _followers_lock:
        _followers -= 1
        last = _followers == 0
    if last:
        # Queued behind any check still in flight; a socket arriving meanwhile reconnects.
        _access_executor.submit(db_connection.close)


# A send goes out under a "yes" at most this old; otherwise it waits for a fresh answer.
ACCESS_FRESH_SECONDS = 0.25
# While frames flow, a new check is started once the answer in hand is this old: well before it
# goes stale, so the next batch rarely waits for the database.
ACCESS_REFRESH_SECONDS = 0.1


class AccessCheck:
    """ "May this caller still follow?" — asked continuously while frames flow.

    Before every send the consumer asks ``allowed()``. After a send a new check starts once the
    answer in hand is ACCESS_REFRESH_SECONDS old (``refresh()``), so the database round trip runs
    while the consumer waits for the next frames instead of between the worker's XADD and the
    client, a few times a second rather than once per batch. A send goes out only under a "yes"
    answered at most ACCESS_FRESH_SECONDS ago (otherwise it waits for the check in flight, or a
    new one), and a "no" ends the stream before the frames in hand are sent. So losing access
    stops the stream within a quarter of a second of the change (plus one check's duration), at
    the latest at the next send.
    """

    def __init__(self, ask) -> None:
        self.ask = ask
        self.pending: asyncio.Task | None = None
        self.answer: bool | None = None
        self.answered_at = float("-inf")

    async def _timed(self) -> tuple[bool, float]:
        allowed = await self.ask()
        return allowed, asyncio.get_running_loop().time()

    def start(self) -> None:
        if self.pending is None:
            self.pending = asyncio.create_task(self._timed())

    def refresh(self) -> None:
        """After a send: ask again only once the answer in hand is getting old, so a busy stream
        costs a few checks per second, not one per batch, and the next batch still finds a
        "yes" younger than ACCESS_FRESH_SECONDS ready."""
        if asyncio.get_running_loop().time() - self.answered_at >= ACCESS_REFRESH_SECONDS:
            self.start()

    async def _settle(self) -> None:
        if self.pending is not None:
            self.answer, self.answered_at = await self.pending
            self.pending = None

    async def allowed(self) -> bool:
        if self.pending is not None and self.pending.done():
            await self._settle()
        if self.answer is False:
            return False
        if (
            self.answer
            and asyncio.get_running_loop().time() - self.answered_at <= ACCESS_FRESH_SECONDS
        ):
            self.refresh()  # keep the next answer coming
            return True
        self.start()
        await self._settle()
        if (
            self.answer
            and asyncio.get_running_loop().time() - self.answered_at > ACCESS_FRESH_SECONDS
        ):
            self.start()  # a check started long before this batch: ask once more
            await self._settle()
        return bool(self.answer)

    def cancel(self) -> None:
        if self.pending is not None:
            self.pending.cancel()


def _entry_seq(entry_id) -> int:
    if isinstance(entry_id, bytes):
        entry_id = entry_id.decode()
    return int(entry_id.split("-", 1)[0])


# What XREAD answers on redis-py's asyncio client: (stream key, its entries) per stream.
StreamReply = list[tuple[bytes, list[StreamEntry]]]


async def _read_streams(client: aioredis.Redis, streams: Mapping[str, str | bytes]) -> StreamReply:
    """The entries after each stream's cursor, waiting up to BLOCK_MS for the first."""
    cursors: dict[bytes | str | memoryview, int | bytes | str | memoryview] = {
        key: cursor for key, cursor in streams.items()
    }
    reply = await client.xread(cursors, count=BATCH, block=BLOCK_MS)
    return cast(StreamReply, reply or [])


async def _newest_entry(client: aioredis.Redis, key: str) -> StreamEntry | None:
    newest = cast(list[StreamEntry], await client.xrevrange(key, count=1))
    return newest[0] if newest else None


def _is_terminal(frame: dict) -> bool:
    return frame.get("type") == "run_finished" and frame.get("status") in TERMINAL_STATUSES


class _FramesConsumer(AsyncWebsocketConsumer):
    """Shared plumbing: who is asking, a Redis connection of its own, a follower task."""

    follower: asyncio.Task | None = None
    redis: aioredis.Redis | None = None  # opened in _start(), closed on disconnect
    joined = False  # counted among the sockets holding the access connection open

    async def _refuse(self, code: int) -> None:
        # A close before the accept is a refused handshake: the server answers it with an HTTP
        # 403 and the client never sees a code. Accept, then close, so the close code the docs
        # promise (4401, 4404, 4422) is what the client receives.
        await self.accept()
        await self.close(code=code)

    async def _caller(self) -> bool:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self._refuse(CLOSE_UNAUTHENTICATED)
            return False
        organization = await _organization_for(self.scope)
        if organization is None:
            await self._refuse(CLOSE_NOT_FOUND)
            return False
        self.user_id = user.pk
        self.organization_id = organization.pk
        self.api_key_id = self.scope.get("api_key_id")
        _follower_joined()
        self.joined = True
        return True

    # What the socket follows: a subclass names its selector (on connect, the one scoped read
    # path), the same question as one prepared statement (between sends) and the subject's id.
    followable: Callable[..., bool]
    followable_sql = ""
    subject_kwarg = ""

    @property
    def subject_id(self) -> int:
        raise NotImplementedError

    async def _admit(self) -> bool:
        """Who is asking, then whether they may follow; closes the socket when not."""
        if not await self._caller():
            return False
        if not await self._may_follow():
            await self._refuse(CLOSE_NOT_FOUND)
            return False
        return True

    async def _may_follow(self) -> bool:
        """The selector, the one scoped read path."""
        return await _checked(
            type(self).followable,
            user_id=self.user_id,
            organization_id=self.organization_id,
            api_key_id=self.api_key_id,
            **{self.subject_kwarg: self.subject_id},
        )

    async def _still_allowed(self) -> bool:
        """Between sends: the same question as one prepared statement."""
        return await _checked(
            still_followable,
            self.followable_sql,
            user_id=self.user_id,
            organization_id=self.organization_id,
            subject_id=self.subject_id,
            api_key_id=self.api_key_id,
        )

    @property
    def _client(self) -> aioredis.Redis:
        if self.redis is None:
            raise RuntimeError("the frames socket reads Redis only once it has started following")
        return self.redis

    async def _start(self, follow) -> None:
        await self.accept()
        self.redis = aioredis.Redis.from_url(settings.REDIS_URL)
        self.follower = asyncio.create_task(self._guarded(follow))

    async def _guarded(self, follow) -> None:
        try:
            await follow()
        except asyncio.CancelledError:
            raise
        except Exception:
            logger.exception("frames socket %s failed", self.scope.get("path"))
            await self.close(code=1011)

    async def disconnect(self, code) -> None:
        if getattr(self, "access", None) is not None:
            self.access.cancel()
        if self.follower is not None:
            self.follower.cancel()
            try:
                await self.follower
            except (asyncio.CancelledError, Exception):
                pass
        if self.redis is not None:
            await self.redis.aclose()
        if self.joined:
            self.joined = False
            _follower_left()

    async def receive(self, text_data=None, bytes_data=None) -> None:
        # The socket is one-way; a client's keep-alive text is answered so it can measure the link.
        if text_data == "ping":
            await self.send(text_data='{"type": "pong"}')


class RunFramesConsumer(_FramesConsumer):
    """`/ws/runs/{run_id}/?after=SEQ` — one run's frames, then close after its terminal frame."""

    followable = staticmethod(selectors.run_followable)
    followable_sql = RUN_FOLLOWABLE_SQL
    subject_kwarg = "run_id"

    @property
    def subject_id(self) -> int:
        return self.run_id

    async def connect(self) -> None:
        self.run_id = int(self.scope["url_route"]["kwargs"]["run_id"])
        try:
            self.after = (
                _cursor(parse_qs(self.scope.get("query_string", b"").decode()), "after") or 0
            )
        except BadCursor:
            await self._refuse(CLOSE_BAD_CURSOR)
            return
        if await self._admit():
            await self._start(self._follow)

    async def _follow(self) -> None:
        key = stream_key(self.run_id)
        last = self.after
        self.access = AccessCheck(self._still_allowed)
        while True:
            reply = await _read_streams(self._client, {key: f"{last}-0"})
            if not reply:
                if await self._ended_quietly(key, last):
                    return
                continue
            entries = reply[0][1]
            # Asked again before every send: access lost mid-stream ends the stream here.
            if not await self.access.allowed():
                await self.close(code=CLOSE_FORBIDDEN)
                return
            for entry_id, fields in entries:
                raw = fields[b"frame"].decode()
                await self.send(text_data=raw)
                last = _entry_seq(entry_id)
                if _is_terminal(json.loads(raw)):
                    await self.close(code=1000)
                    return
            self.access.refresh()

    async def _ended_quietly(self, key: str, last: int) -> bool:
        """Nothing new for a while: close if the run is finished and the client has it all, or
        rebuild the terminal frame when the stream itself has expired."""
        terminal = await database_sync_to_async(selectors.run_terminal_frame)(self.run_id)
        if terminal is None:
            return False
        newest = await _newest_entry(self._client, key)
        if newest is None:
            if not await self._may_follow():
                await self.close(code=CLOSE_FORBIDDEN)
                return True
            await self.send(
                text_data=json.dumps({**terminal, "seq": last + 1, "replayed_from": "database"})
            )
            await self.close(code=1000)
            return True
        newest_id, fields = newest
        if _entry_seq(newest_id) > last:
            return False  # the read below will deliver it
        if _is_terminal(json.loads(fields[b"frame"])):
            await self.close(code=1000)
            return True
        return False  # the row is final but its terminal frame is still on its way


class ConversationFramesConsumer(_FramesConsumer):
    """`/ws/conversations/{id}/?after_run=RUN&after=SEQ` — every run of one conversation, in turn.

    Without a cursor it replays the conversation's latest run and follows the runs started after
    it; with one, every run from ``after_run`` on (that run's frames after ``after``). Its owner
    only: runs:view reads a colleague's run, never their thread.
    """

    followable = staticmethod(selectors.conversation_followable)
    followable_sql = CONVERSATION_FOLLOWABLE_SQL
    subject_kwarg = "conversation_id"

    @property
    def subject_id(self) -> int:
        return self.conversation_id

    async def connect(self) -> None:
        self.conversation_id = int(self.scope["url_route"]["kwargs"]["conversation_id"])
        query = parse_qs(self.scope.get("query_string", b"").decode())
        try:
            self.after_run = _cursor(query, "after_run")
            self.after = _cursor(query, "after") or 0
        except BadCursor:
            await self._refuse(CLOSE_BAD_CURSOR)
            return
        if await self._admit():
            await self._start(self._follow)

    async def _follow(self) -> None:
        announcements = conversation_key(self.conversation_id)
        # Read the announcement cursor before the rows: a run committed in between is then both
        # found below and announced, never neither.
        newest = await _newest_entry(self._client, announcements)
        announced_after: str | bytes = newest[0] if newest is not None else b"0-0"
        run_ids = await database_sync_to_async(selectors.conversation_run_ids)(
            self.conversation_id, from_run_id=self.after_run
        )
        cursors = {run_id: (self.after if run_id == self.after_run else 0) for run_id in run_ids}
        finished: set[int] = set()
        self.access = AccessCheck(self._still_allowed)
        while True:
            streams: dict[str, str | bytes] = {announcements: announced_after}
            streams.update({stream_key(run_id): f"{seq}-0" for run_id, seq in cursors.items()})
            reply = await _read_streams(self._client, streams)
            if not reply:
                continue
            if not await self.access.allowed():
                await self.close(code=CLOSE_FORBIDDEN)
                return
            for raw_key, entries in reply:
                key = raw_key.decode() if isinstance(raw_key, bytes) else raw_key
                if key == announcements:
                    for entry_id, fields in entries:
                        announced_after = entry_id
                        run_id = int(fields[b"run_id"])
                        if run_id not in cursors and run_id not in finished:
                            cursors[run_id] = 0
                    continue
                run_id = int(key.rsplit(":", 2)[-2])
                for entry_id, fields in entries:
                    raw = fields[b"frame"].decode()
                    await self.send(text_data=raw)
                    cursors[run_id] = _entry_seq(entry_id)
                    if _is_terminal(json.loads(raw)):
                        finished.add(run_id)
                        cursors.pop(run_id, None)
                        break
            self.access.refresh()
