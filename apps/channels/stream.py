"""The Mattermost event stream: the bot account's websocket, for what an outgoing webhook never
delivers — a direct message to the bot (outgoing webhooks fire in public channels only), and a
mention of it in a private channel or a group message.

:class:`Listener` is the long-running half of ``agenticos channels-listen`` (started by
``agenticos up`` beside web, worker and beat): one websocket per enabled Mattermost binding,
reopened with backoff when it drops, and the set of bindings read again every
``CHANNEL_STREAM_REFRESH_SECONDS`` so a binding added, disabled, re-enabled or given another
server or token is picked up without a restart.

Each socket is opened to ``{server_url}/api/v4/websocket`` — the address ``check_server_url``
lets through, checked again on every connect, the same check as every REST call the bot makes —
and proven with the binding's own bot token (``authentication_challenge``); redirects are not
followed. What arrives on it is the binding's: the socket's authentication is its verification,
as the token is the webhook's. A ``posted`` event the bot answers goes through the one admission
path the webhooks use (``services.inbound_admit``: deduplicated by ``post_id``, so a post both
the webhook and the stream see runs once), and a worker handles it from there like any message.

Database work runs on a small thread pool (the ORM is synchronous), each call closing its
connection after itself: the listener is mostly idle, and a connection held for hours is one a
database restart would break.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import random
import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial

from django.conf import settings
from django.db import DatabaseError, close_old_connections, connection
from websockets.asyncio.client import connect as ws_connect
from websockets.exceptions import WebSocketException

from apps.outbound.addresses import Refused, check_url

from . import selectors, services
from .bots import BotUnavailable, client_of, server_host
from .platforms import PlatformError, parse_mattermost_event

logger = logging.getLogger(__name__)

REFRESH_SECONDS = 10.0
# The first wait before reopening a socket, doubled after each failed attempt up to the last.
RECONNECT_SECONDS = (1.0, 60.0)
OPEN_TIMEOUT_SECONDS = 10.0
AUTH_SEQ = 1


def refresh_seconds() -> float:
    return float(getattr(settings, "CHANNEL_STREAM_REFRESH_SECONDS", REFRESH_SECONDS))


def reconnect_delay(failures: int) -> float:
    """How long to wait after the ``failures``-th failure in a row (with jitter, so the sockets
    of one server that went down do not all knock again at the same instant)."""
    first, longest = getattr(settings, "CHANNEL_STREAM_RECONNECT_SECONDS", RECONNECT_SECONDS)
    delay = min(float(longest), float(first) * 2 ** max(0, failures - 1))
    return delay * random.uniform(0.5, 1.0)


class StreamRefused(Exception):
    """The server refused the bot's token on the websocket."""


@dataclass(frozen=True)
class StreamPlan:
    """What one socket is opened with, read from its binding just before each connect."""

    binding_id: int
    url: str
    token: str
    server_host: str
    bot_user_id: str
    bot_username: str


class _Connect(ws_connect):
    # The address dialled is the one check_server_url let through; a redirect could lead
    # anywhere (a private address, a metadata service), so it is a failed connect instead.
    def process_redirect(self, exc: Exception) -> Exception | str:
        return exc


def _with_connection(function, *args):
    close_old_connections()
    try:
        return function(*args)
    finally:
        connection.close()


def stream_plan(binding_id: int) -> StreamPlan | None:
    """The socket's address and credentials, and who the bot is (``GET /users/me``, which also
    proves the token before the socket is opened); None once the binding is gone or disabled."""
    binding = selectors.binding_for_stream(binding_id, enabled_only=True)
    if binding is None:
        return None
    client = client_of(binding)
    bot_user_id, bot_username = client.me()
    return StreamPlan(
        binding_id=binding.pk,
        url=client.websocket_url,
        token=client.token,
        server_host=server_host(binding),
        bot_user_id=bot_user_id,
        bot_username=bot_username,
    )


def stream_admit(binding_id: int, inbound) -> str:
    """One post from the binding's socket through the webhooks' admission path; the outcome."""
    binding = selectors.binding_for_stream(binding_id)
    if binding is None:
        return "gone"
    outcome, _ = services.inbound_admit(binding=binding, inbound=inbound)
    return outcome


class Listener:
    """The websockets of every enabled Mattermost binding, kept open until ``stop`` is set."""

    def __init__(self) -> None:
        self._streams: dict[int, tuple[tuple, asyncio.Task]] = {}
        self._executor = ThreadPoolExecutor(max_workers=4, thread_name_prefix="channels-listen")

    async def _db(self, function, *args):
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(
            self._executor, partial(_with_connection, function, *args)
        )

    async def run(self, stop: asyncio.Event) -> None:
        try:
            while not stop.is_set():
                await self.refresh()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), timeout=refresh_seconds())
        finally:
            await self.close_all()
            self._executor.shutdown(wait=True)

    async def refresh(self) -> None:
        """Open the sockets of bindings new or changed since the last look, close those of
        bindings disabled or deleted, and reopen one whose task ended on an error."""
        try:
            wanted = await self._db(selectors.bindings_to_stream)
        except DatabaseError as exc:
            logger.warning(
                "channels-listen: cannot read the bindings (%s); keeping the sockets", exc
            )
            return
        for binding_id, (key, task) in list(self._streams.items()):
            if task.done() and not task.cancelled() and task.exception() is not None:
                logger.error(
                    "channels-listen: binding %s: the stream ended on an error; reopening",
                    binding_id,
                    exc_info=task.exception(),
                )
            if wanted.get(binding_id) != key or task.done():
                await self._close(binding_id)
        for binding_id, key in wanted.items():
            if binding_id not in self._streams:
                task = asyncio.create_task(
                    self._stream(binding_id), name=f"mattermost-{binding_id}"
                )
                self._streams[binding_id] = (key, task)

    async def _close(self, binding_id: int) -> None:
        _, task = self._streams.pop(binding_id)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)

    async def close_all(self) -> None:
        for binding_id in list(self._streams):
            await self._close(binding_id)

    async def _stream(self, binding_id: int) -> None:
        """One binding's socket, for as long as the binding wants one: connect, authenticate,
        hand each post to the admission path; on a drop or a refusal, wait and connect again."""
        failures = 0
        while True:
            try:
                plan = await self._db(stream_plan, binding_id)
                if plan is None:
                    return  # disabled or deleted meanwhile: the next refresh forgets it
                authenticated = await self._serve(plan)
                if authenticated:
                    failures = 0
                logger.info("channels-listen: binding %s: the server closed the socket", binding_id)
            except (
                OSError,
                TimeoutError,
                WebSocketException,
                PlatformError,
                Refused,
                BotUnavailable,
                StreamRefused,
                DatabaseError,
            ) as exc:
                logger.warning(
                    "channels-listen: binding %s: %s: %s", binding_id, type(exc).__name__, exc
                )
            failures += 1
            await asyncio.sleep(reconnect_delay(failures))

    async def _serve(self, plan: StreamPlan) -> bool:
        """Read one socket until it closes; True when it had authenticated."""
        authenticated = False
        # Checked again and pinned (apps/outbound): the socket opens to the address just judged,
        # under the server's own name (Host header, TLS), not to what the name answers next.
        checked = await asyncio.to_thread(
            check_url, re.sub(r"^ws", "http", plan.url), https_unless_listed=True
        )
        async with _Connect(
            plan.url,
            open_timeout=OPEN_TIMEOUT_SECONDS,
            host=checked.addresses[0],
            port=checked.target.port,
            # A proxy from the environment would make the connection instead of this pin.
            proxy=None,
        ) as socket:
            await socket.send(
                json.dumps(
                    {
                        "seq": AUTH_SEQ,
                        "action": "authentication_challenge",
                        "data": {"token": plan.token},
                    }
                )
            )
            async for raw in socket:
                try:
                    event = json.loads(raw)
                except ValueError:
                    continue
                if not isinstance(event, dict):
                    continue
                if event.get("seq_reply") == AUTH_SEQ:
                    if event.get("status") != "OK":
                        raise StreamRefused(
                            f"the server refused the bot's token: {event.get('error') or event}"
                        )
                    authenticated = True
                    logger.info("channels-listen: binding %s: listening", plan.binding_id)
                    continue
                inbound = parse_mattermost_event(
                    event,
                    server_host=plan.server_host,
                    bot_user_id=plan.bot_user_id,
                    bot_username=plan.bot_username,
                )
                if inbound is None:
                    continue
                try:
                    outcome = await self._db(stream_admit, plan.binding_id, inbound)
                except DatabaseError as exc:
                    # The post is lost to this path (a webhook may still bring it); the socket
                    # stays open for the next one.
                    logger.warning(
                        "channels-listen: binding %s: post %s not admitted: %s",
                        plan.binding_id,
                        inbound.delivery_id,
                        exc,
                    )
                    continue
                logger.info(
                    "channels-listen: binding %s: post %s %s",
                    plan.binding_id,
                    inbound.delivery_id,
                    outcome,
                )
        return authenticated
