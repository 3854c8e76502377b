"""The three platforms: what an inbound payload says, and how the bot posts, edits and looks up.

Inbound: each ``parse_*`` turns a verified payload into an :class:`Inbound` (or None for what the
bot does not answer: its own messages, edits, joins, a channel message that does not name it).
Outbound: :class:`SlackClient`, :class:`TelegramClient` and :class:`MattermostClient` speak the
platform's HTTP API with the bot's own token (httpx, short timeouts). Slack's and Telegram's API
addresses are fixed (``CHANNEL_API_BASE_URLS`` moves them for the tests only); a Mattermost
server's address is the binding's, checked by :func:`check_server_url` when it is saved and
again before every client is made.

A client never retries a refused call: the platform's error names the problem
(:class:`PlatformError`), and the caller decides whether a person is told.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx
from django.conf import settings

from apps.outbound.addresses import Refused, check_url
from apps.outbound.clients import legacy_client

from .choices import Platform

TIMEOUT_SECONDS = 10.0
SLACK_API = "https://slack.com/api"
TELEGRAM_API = "https://api.telegram.org"
# The longest message each platform takes (Slack recommends 4,000 characters for a message it
# renders; Telegram refuses more than 4,096; Mattermost's post limit is 16,383).
MAX_CHARS = {Platform.SLACK: 3_900, Platform.TELEGRAM: 4_000, Platform.MATTERMOST: 16_000}
# The least time between two edits of one message, per platform: Slack's chat.update is a tier-3
# method (about 50 a minute), Telegram allows about one edit a second in a chat, Mattermost has
# no published limit and is given twice that.
EDIT_INTERVAL_SECONDS = {Platform.SLACK: 1.2, Platform.TELEGRAM: 1.0, Platform.MATTERMOST: 0.5}


class PlatformError(Exception):
    """The platform refused a call or could not be reached; ``sentence`` says which."""

    def __init__(self, sentence: str) -> None:
        self.sentence = sentence
        super().__init__(sentence)


class ServerRefused(Exception):
    """A Mattermost server URL this deployment will not dial; ``sentence`` says why."""

    def __init__(self, sentence: str) -> None:
        self.sentence = sentence
        super().__init__(sentence)


# Slack answers users.info one user at a time: a member list or a history names at most this
# many people per call (the rest keep their ids), so a long list stays within Slack's rate.
NAME_LOOKUPS_PER_CALL = 50


def _form_value(value) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def _named(names: dict[str, str], user_id: str) -> str:
    # The id stays beside a Slack name: it is what a mention (<@U…>) is written with.
    return f"{names[user_id]} ({user_id})" if user_id in names else user_id


def edit_interval(platform: str) -> float:
    overrides = getattr(settings, "CHANNEL_EDIT_INTERVAL_SECONDS", None) or {}
    return float(overrides.get(platform, EDIT_INTERVAL_SECONDS[Platform(platform)]))


def _api_base(platform: str, default: str) -> str:
    return (settings.CHANNEL_API_BASE_URLS or {}).get(platform, default).rstrip("/")


# --- where a Mattermost server may be -----------------------------------------------------------


def check_server_url(url: str) -> str:
    """The URL, normalized, or ``ServerRefused``: the outbound check (apps/outbound), with https
    required unless the operator lists the server in OUTBOUND_ALLOW — the bot's token travels
    with every call, and a self-hosted server behind the VPN is what the allow-list is for."""
    try:
        checked = check_url(url, https_unless_listed=True)
    except Refused as refused:
        raise ServerRefused(refused.sentence) from None
    parts = urlsplit(checked.target.url)
    return f"{parts.scheme}://{parts.netloc}{parts.path}".rstrip("/")


# --- inbound ------------------------------------------------------------------------------------


@dataclass
class Inbound:
    """One message the bot is asked to answer, as the worker needs it (stored as JSON)."""

    platform: str
    delivery_id: str
    # The sender's account on the platform (AccountLink.account_key) and a name to greet.
    account_key: str
    sender_name: str
    text: str
    # The chat the reply belongs to (ChatThread.chat_key): a Slack thread is a chat of its own.
    chat_key: str
    # The room, for a group chat (its memory store: Conversation.group_chat_key); "" for a DM.
    room_key: str
    is_direct: bool
    # Where replies go, in the platform's own terms (channel, thread, message to reply to).
    target: dict = field(default_factory=dict)

    def as_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> Inbound:
        return cls(**data)


_SLACK_MENTION = re.compile(r"<@[A-Z0-9]+>[ \t]?")
_LEADING_HANDLE = re.compile(r"^\s*@\w+[ \t]?")


def _strip_mention(text: str) -> str:
    # "<@U0BOT> what is due?" -> "what is due?"; Slack's mention markup is "<@ID>". Lines are
    # kept as they were written.
    return _SLACK_MENTION.sub("", text).strip()


def parse_slack(payload: dict) -> Inbound | None:
    """An Events API ``event_callback``: a direct message (``message`` in an ``im``) or a
    mention in a channel (``app_mention``). A channel mention is answered in its thread — the
    thread it was in, or the one it starts — so the thread's ts is part of the chat."""
    event = payload.get("event") or {}
    if payload.get("type") != "event_callback" or not isinstance(event, dict):
        return None
    if event.get("bot_id") or event.get("subtype"):
        return None  # the bot's own messages, edits, joins
    kind, channel_type = event.get("type"), event.get("channel_type")
    is_direct = kind == "message" and channel_type == "im"
    if not (is_direct or kind == "app_mention"):
        return None
    team, channel, user = payload.get("team_id", ""), event.get("channel", ""), event.get("user")
    text = _strip_mention(str(event.get("text") or ""))
    if not (channel and user and text):
        return None
    thread_ts = event.get("thread_ts") or (None if is_direct else event.get("ts"))
    chat_key = f"slack:{team}:{channel}" + (f":{thread_ts}" if thread_ts else "")
    return Inbound(
        platform=Platform.SLACK,
        delivery_id=str(payload.get("event_id") or f"{channel}:{event.get('ts')}")[:128],
        account_key=f"{team}:{user}",
        sender_name=str(user),
        text=text,
        chat_key=chat_key,
        room_key="" if is_direct else f"slack:{team}:{channel}",
        is_direct=is_direct,
        target={"channel": channel, "thread_ts": thread_ts},
    )


def parse_telegram(payload: dict) -> Inbound | None:
    """An ``Update`` with a text ``message``. A private chat is direct; in a group the bot
    answers what Telegram delivers to it (with privacy mode on, the default: commands, mentions
    and replies to the bot), replying to the message it answers."""
    message = payload.get("message") or {}
    if not isinstance(message, dict) or "update_id" not in payload:
        return None
    sender, chat = message.get("from") or {}, message.get("chat") or {}
    text = str(message.get("text") or "").strip()
    if sender.get("is_bot") or not text or "id" not in chat or "id" not in sender:
        return None
    is_direct = chat.get("type") == "private"
    topic = message.get("message_thread_id")
    chat_key = f"telegram:{chat['id']}" + (f":{topic}" if topic else "")
    name = sender.get("username") or sender.get("first_name") or str(sender["id"])
    return Inbound(
        platform=Platform.TELEGRAM,
        delivery_id=str(payload["update_id"]),
        account_key=str(sender["id"]),
        sender_name=str(name),
        # In a group the message usually opens with the bot's handle: "@helper_bot status?".
        text=text if is_direct else _LEADING_HANDLE.sub("", text).strip(),
        chat_key=chat_key,
        room_key="" if is_direct else f"telegram:{chat['id']}",
        is_direct=is_direct,
        target={
            "chat_id": chat["id"],
            "reply_to": None if is_direct else message.get("message_id"),
            "topic": topic,
        },
    )


def parse_mattermost(payload: dict, *, server_host: str) -> Inbound | None:
    """An outgoing webhook's post. Mattermost fires outgoing webhooks in public channels only,
    on the integration's trigger words; the reply goes in the post's thread."""
    user_id, channel_id = payload.get("user_id"), payload.get("channel_id")
    post_id = payload.get("post_id")
    text = str(payload.get("text") or "").strip()
    trigger = str(payload.get("trigger_word") or "").strip()
    if trigger and text.startswith(trigger):
        text = text[len(trigger) :].strip()
    if not (user_id and channel_id and post_id and text):
        return None
    team = payload.get("team_id", "")
    return Inbound(
        platform=Platform.MATTERMOST,
        delivery_id=str(post_id)[:128],
        account_key=f"{server_host}:{user_id}",
        sender_name=str(payload.get("user_name") or user_id),
        text=text,
        chat_key=f"mattermost:{team}:{channel_id}:{post_id}",
        room_key=f"mattermost:{team}:{channel_id}",
        is_direct=False,
        target={"channel_id": channel_id, "root_id": post_id, "team_id": team, "user_id": user_id},
    )


def _json_field(value, default):
    # The websocket's event data carries nested JSON as strings (``post``, ``mentions``).
    if not isinstance(value, str):
        return default
    try:
        return json.loads(value)
    except ValueError:
        return default


def parse_mattermost_event(
    event: dict, *, server_host: str, bot_user_id: str, bot_username: str = ""
) -> Inbound | None:
    """A ``posted`` event of the bot's websocket (``/api/v4/websocket``): a direct message to the
    bot (``channel_type`` "D"), or a post in a channel or group message that mentions it — never
    the bot's own posts, another bot's or a webhook's, a system message, or an edit (those are
    other events). ``data.post`` is the post as a JSON string.

    A channel post is the same :class:`Inbound` the outgoing webhook makes of it (the same
    ``post_id`` as delivery id, the same sender key), so a post both paths see runs once; a
    reply in a thread belongs to the thread's root. A DM is one conversation with its sender
    (``mattermost:dm:{channel}``; a thread inside it is a chat of its own), answered in the DM."""
    if not isinstance(event, dict) or event.get("event") != "posted":
        return None
    data = event.get("data")
    if not isinstance(data, dict):
        data = {}
    post = _json_field(data.get("post"), {})
    if not isinstance(post, dict):
        return None
    user_id, channel_id, post_id = post.get("user_id"), post.get("channel_id"), post.get("id")
    if not (user_id and channel_id and post_id) or user_id == bot_user_id:
        return None
    props = post.get("props")
    if not isinstance(props, dict):
        props = {}
    if post.get("type") or str(props.get("from_bot")) == "true":
        return None  # a system message (a join, a header change) or a bot's post
    if str(props.get("from_webhook")) == "true":
        return None
    channel_type = data.get("channel_type")
    is_direct = channel_type == "D"
    if not is_direct:
        mentions = _json_field(data.get("mentions"), [])
        if not isinstance(mentions, list) or bot_user_id not in mentions:
            return None
    text = str(post.get("message") or "").strip()
    if bot_username:
        text = re.sub(rf"^@{re.escape(bot_username)}(?![\w.-])[ \t]?", "", text).strip()
    if not text:
        return None
    team = str(data.get("team_id") or "")
    root_id = str(post.get("root_id") or "")
    sender = str(data.get("sender_name") or user_id).lstrip("@")
    if is_direct:
        chat_key = f"mattermost:dm:{channel_id}" + (f":{root_id}" if root_id else "")
        room_key, reply_root = "", root_id or None
    else:
        reply_root = root_id or str(post_id)
        chat_key = f"mattermost:{team}:{channel_id}:{reply_root}"
        room_key = f"mattermost:{team}:{channel_id}"
    return Inbound(
        platform=Platform.MATTERMOST,
        delivery_id=str(post_id)[:128],
        account_key=f"{server_host}:{user_id}",
        sender_name=sender or str(user_id),
        text=text,
        chat_key=chat_key,
        room_key=room_key,
        is_direct=is_direct,
        target={
            "channel_id": channel_id,
            "root_id": reply_root,
            "team_id": team,
            "user_id": user_id,
        },
    )


# --- outbound -----------------------------------------------------------------------------------


class _Client:
    platform: str

    def __init__(self, token: str) -> None:
        self.token = token

    @property
    def max_chars(self) -> int:
        return MAX_CHARS[Platform(self.platform)]

    def _http(self) -> httpx.Client:
        return httpx.Client(timeout=TIMEOUT_SECONDS, follow_redirects=False)

    def _send(self, method: str, url: str, **kwargs) -> Any:
        try:
            with self._http() as client:
                response = client.request(method, url, **kwargs)
        except httpx.HTTPError:
            # One sentence whatever the network said (refused, timed out, reset, an address the
            # outbound check refused): the platform's name, never a port's state.
            raise PlatformError(f"{self.platform} could not be reached") from None
        try:
            body = response.json()
        except ValueError:
            body = None
        return response, body


class SlackClient(_Client):
    platform = Platform.SLACK

    def __init__(self, token: str) -> None:
        super().__init__(token)
        self.base = _api_base(Platform.SLACK, SLACK_API)

    def call(self, method: str, **arguments) -> dict:
        response, body = self._send(
            "POST",
            f"{self.base}/{method}",
            json=arguments,
            headers={"Authorization": f"Bearer {self.token}"},
        )
        if not isinstance(body, dict) or not body.get("ok"):
            error = body.get("error") if isinstance(body, dict) else f"HTTP {response.status_code}"
            raise PlatformError(f"Slack refused {method}: {error}")
        return body

    def call_form(self, method: str, **arguments) -> dict:
        # Slack takes JSON bodies for most write methods only: its read methods
        # (conversations.*, users.info) and files.getUploadURLExternal take form fields.
        response, body = self._send(
            "POST",
            f"{self.base}/{method}",
            data={key: _form_value(value) for key, value in arguments.items()},
            headers={"Authorization": f"Bearer {self.token}"},
        )
        if not isinstance(body, dict) or not body.get("ok"):
            error = body.get("error") if isinstance(body, dict) else f"HTTP {response.status_code}"
            raise PlatformError(f"Slack refused {method}: {error}")
        return body

    def check(self) -> str:
        body = self.call("auth.test")
        return f"Connected to Slack workspace {body.get('team', '?')} as {body.get('user', '?')}."

    def post(self, target: dict, text: str) -> str:
        arguments = {"channel": target["channel"], "text": text}
        if target.get("thread_ts"):
            arguments["thread_ts"] = target["thread_ts"]
        return str(self.call("chat.postMessage", **arguments)["ts"])

    def edit(self, target: dict, message_id: str, text: str) -> None:
        self.call("chat.update", channel=target["channel"], ts=message_id, text=text)

    def send_direct(self, inbound: Inbound, text: str) -> None:
        # The link is only offered in a direct message, which is where the reply goes.
        self.post(inbound.target, text)

    def send_image(self, target: dict, image: bytes, *, title: str, filename: str) -> str:
        """Slack's external upload: ask for an upload URL, send the bytes there, then share the
        file in the channel (and the thread) — three calls; returns the file id."""
        upload = self.call_form("files.getUploadURLExternal", filename=filename, length=len(image))
        url, file_id = upload.get("upload_url"), upload.get("file_id")
        if not (isinstance(url, str) and file_id):
            raise PlatformError("Slack gave no upload URL (files.getUploadURLExternal)")
        self._check_upload_url(url)
        # The upload URL is pre-signed: the bot's token is not sent there.
        response, _ = self._send(
            "POST", url, content=image, headers={"Content-Type": "application/octet-stream"}
        )
        if response.status_code != 200:
            raise PlatformError(
                f"Slack refused the upload of {filename}: HTTP {response.status_code}"
            )
        arguments: dict[str, Any] = {
            "files": [{"id": file_id, "title": title}],
            "channel_id": target["channel"],
        }
        if target.get("thread_ts"):
            arguments["thread_ts"] = target["thread_ts"]
        self.call("files.completeUploadExternal", **arguments)
        return str(file_id)

    def _check_upload_url(self, url: str) -> None:
        # The address comes from Slack's answer; only Slack's own hosts (or the API base the
        # tests point at) are sent a file.
        parts, base = urlsplit(url), urlsplit(self.base)
        host = (parts.hostname or "").lower()
        slack_host = parts.scheme == "https" and (
            host == "slack.com" or host.endswith(".slack.com")
        )
        same_as_api = (parts.scheme, parts.netloc) == (base.scheme, base.netloc)
        if not (slack_host or same_as_api):
            raise PlatformError(f"Slack's upload URL is not a Slack address ({host or '?'})")

    # channel_tools: the channel holding the thread, with the bot's token.
    def channel_info(self, target: dict) -> dict:
        channel = self.call_form(
            "conversations.info", channel=target["channel"], include_num_members=True
        )
        data = channel.get("channel") or {}
        return {
            "name": data.get("name") or target["channel"],
            "topic": (data.get("topic") or {}).get("value", ""),
            "purpose": (data.get("purpose") or {}).get("value", ""),
            "members": data.get("num_members"),
        }

    def display_names(self, user_ids: list[str]) -> dict[str, str]:
        """Each user's name as Slack shows it (``users.info``), looked up once per id within one
        call, at most ``NAME_LOOKUPS_PER_CALL`` of them; an id whose lookup is refused (no
        ``users:read`` scope, a deleted user) keeps its id, and a refused scope stops the rest."""
        names: dict[str, str] = {}
        for user_id in list(dict.fromkeys(user_ids))[:NAME_LOOKUPS_PER_CALL]:
            try:
                user = self.call_form("users.info", user=user_id).get("user") or {}
            except PlatformError as exc:
                if "missing_scope" in exc.sentence or "not_allowed" in exc.sentence:
                    break
                continue
            profile = user.get("profile") or {}
            name = (
                profile.get("display_name")
                or profile.get("real_name")
                or user.get("real_name")
                or user.get("name")
            )
            if name:
                names[user_id] = str(name)
        return names

    def channel_members(self, target: dict, limit: int) -> tuple[list[str], bool]:
        body = self.call_form("conversations.members", channel=target["channel"], limit=limit + 1)
        members = [str(member) for member in body.get("members") or []]
        shown = members[:limit]
        names = self.display_names(shown)
        return [_named(names, member) for member in shown], len(members) > limit

    def search_channels(self, query: str, limit: int) -> list[dict]:
        body = self.call_form("conversations.list", exclude_archived=True, limit=1000)
        words = query.lower().split()
        found = []
        for channel in body.get("channels") or []:
            purpose = (channel.get("purpose") or {}).get("value", "")
            haystack = f"{channel.get('name', '')} {purpose}".lower()
            if all(word in haystack for word in words):
                found.append({"name": channel.get("name", ""), "purpose": purpose})
        return found[:limit]

    def history(self, target: dict, limit: int) -> tuple[list[dict], bool]:
        body = self.call_form("conversations.history", channel=target["channel"], limit=limit)
        found = body.get("messages") or []
        names = self.display_names([str(m["user"]) for m in found if m.get("user")])
        messages = [
            {
                "author": _named(names, str(m["user"]))
                if m.get("user")
                else str(m.get("bot_id") or "?"),
                "at": m.get("ts", ""),
                "text": m.get("text", ""),
            }
            for m in found
        ]
        messages.reverse()  # Slack answers newest first; the newest goes last
        return messages, bool(body.get("has_more"))


class TelegramClient(_Client):
    platform = Platform.TELEGRAM

    def __init__(self, token: str) -> None:
        super().__init__(token)
        self.base = _api_base(Platform.TELEGRAM, TELEGRAM_API)

    def call(self, method: str, **arguments) -> Any:
        response, body = self._send("POST", f"{self.base}/bot{self.token}/{method}", json=arguments)
        return self._result(method, response, body)

    def _result(self, method: str, response, body) -> Any:
        if not isinstance(body, dict) or not body.get("ok"):
            error = body.get("description") if isinstance(body, dict) else None
            raise PlatformError(
                f"Telegram refused {method}: {error or f'HTTP {response.status_code}'}"
            )
        return body.get("result")

    def check(self) -> str:
        me = self.call("getMe") or {}
        return f"Connected to Telegram as @{me.get('username', '?')}."

    def set_webhook(self, url: str, secret_token: str) -> None:
        # Only messages: an edit, a reaction or a join is nothing the bot answers.
        self.call("setWebhook", url=url, secret_token=secret_token, allowed_updates=["message"])

    def post(self, target: dict, text: str) -> str:
        arguments: dict[str, Any] = {"chat_id": target["chat_id"], "text": text}
        if target.get("reply_to"):
            arguments["reply_to_message_id"] = target["reply_to"]
        if target.get("topic"):
            arguments["message_thread_id"] = target["topic"]
        return str((self.call("sendMessage", **arguments) or {})["message_id"])

    def edit(self, target: dict, message_id: str, text: str) -> None:
        self.call(
            "editMessageText", chat_id=target["chat_id"], message_id=int(message_id), text=text
        )

    def send_direct(self, inbound: Inbound, text: str) -> None:
        self.post(inbound.target, text)

    def send_image(self, target: dict, image: bytes, *, title: str, filename: str) -> str:
        """``sendPhoto`` (multipart: the photo is uploaded, not linked), captioned with the
        chart's title, replying where the text replied; returns the message id."""
        fields = {"chat_id": str(target["chat_id"]), "caption": title[:1024]}
        if target.get("reply_to"):
            fields["reply_to_message_id"] = str(target["reply_to"])
        if target.get("topic"):
            fields["message_thread_id"] = str(target["topic"])
        response, body = self._send(
            "POST",
            f"{self.base}/bot{self.token}/sendPhoto",
            data=fields,
            files={"photo": (filename, image, "image/png")},
        )
        return str((self._result("sendPhoto", response, body) or {})["message_id"])

    def channel_info(self, target: dict) -> dict:
        chat = self.call("getChat", chat_id=target["chat_id"]) or {}
        count = self.call("getChatMemberCount", chat_id=target["chat_id"])
        return {
            "name": chat.get("title") or chat.get("username") or str(target["chat_id"]),
            "topic": "",
            "purpose": chat.get("description", ""),
            "members": count,
        }

    def channel_members(self, target: dict, limit: int) -> tuple[list[str], bool]:
        # Telegram lets a bot list a chat's administrators and nobody else.
        admins = self.call("getChatAdministrators", chat_id=target["chat_id"]) or []
        names = []
        for admin in admins:
            user = admin.get("user") or {}
            names.append(str(user.get("username") or user.get("first_name") or user.get("id")))
        return names[:limit], len(names) > limit


class MattermostClient(_Client):
    platform = Platform.MATTERMOST

    def __init__(self, token: str, server_url: str, team_id: str = "") -> None:
        super().__init__(token)
        # The team a channel search looks in: the team of the channel the message came from.
        self.team_id = team_id
        try:
            self.base = check_server_url(server_url) + "/api/v4"
        except ServerRefused as exc:
            raise PlatformError(f"The Mattermost server URL is refused: {exc.sentence}") from None

    def _http(self) -> httpx.Client:
        # The server is the binding's: every call is checked again and pinned (apps/outbound),
        # because what its name resolves to can change after the binding was saved.
        return legacy_client(
            timeout=TIMEOUT_SECONDS, follow_redirects=False, https_unless_listed=True
        )

    def call(self, method: str, path: str, **kwargs) -> Any:
        response, body = self._send(
            method,
            f"{self.base}{path}",
            headers={"Authorization": f"Bearer {self.token}"},
            **kwargs,
        )
        if response.status_code >= 400:
            error = body.get("message") if isinstance(body, dict) else None
            raise PlatformError(
                f"Mattermost refused {method} {path}: {error or f'HTTP {response.status_code}'}"
            )
        return body

    def check(self) -> str:
        me = self.call("GET", "/users/me") or {}
        return f"Connected to Mattermost as @{me.get('username', '?')}."

    def me(self) -> tuple[str, str]:
        """The bot's own user id and username: its own posts are ignored on the websocket, and
        a leading @mention of it is stripped from the input."""
        me = self.call("GET", "/users/me") or {}
        if not me.get("id"):
            raise PlatformError("Mattermost did not say who the bot is (GET /users/me)")
        return str(me["id"]), str(me.get("username") or "")

    @property
    def websocket_url(self) -> str:
        """The server's event stream, at the address ``check_server_url`` let through (ws for
        http, wss for https)."""
        return re.sub(r"^http", "ws", self.base) + "/websocket"

    def post(self, target: dict, text: str) -> str:
        body = {"channel_id": target["channel_id"], "message": text}
        if target.get("root_id"):
            body["root_id"] = target["root_id"]
        return str(self.call("POST", "/posts", json=body)["id"])

    def edit(self, target: dict, message_id: str, text: str) -> None:
        self.call("PUT", f"/posts/{message_id}/patch", json={"message": text})

    def send_image(self, target: dict, image: bytes, *, title: str, filename: str) -> str:
        """Upload the file to the channel (``POST /files``), then post it under the thread's root
        with its title; returns the post id."""
        uploaded = (
            self.call(
                "POST",
                "/files",
                data={"channel_id": target["channel_id"]},
                files={"files": (filename, image, "image/png")},
            )
            or {}
        )
        file_ids = [
            str(info.get("id")) for info in uploaded.get("file_infos") or [] if info.get("id")
        ]
        if not file_ids:
            raise PlatformError("Mattermost stored no file (POST /files)")
        body = {"channel_id": target["channel_id"], "message": title, "file_ids": file_ids}
        if target.get("root_id"):
            body["root_id"] = target["root_id"]
        return str(self.call("POST", "/posts", json=body)["id"])

    def send_direct(self, inbound: Inbound, text: str) -> None:
        if inbound.is_direct:
            # A DM that arrived by the websocket: the reply goes in that DM.
            self.post(inbound.target, text)
            return
        # An outgoing webhook never fires in a direct message, so the bot opens one.
        me = self.call("GET", "/users/me") or {}
        channel = (
            self.call("POST", "/channels/direct", json=[me.get("id"), inbound.target["user_id"]])
            or {}
        )
        self.call("POST", "/posts", json={"channel_id": channel.get("id"), "message": text})

    def channel_info(self, target: dict) -> dict:
        channel = self.call("GET", f"/channels/{target['channel_id']}") or {}
        stats = self.call("GET", f"/channels/{target['channel_id']}/stats") or {}
        return {
            "name": channel.get("display_name") or channel.get("name", ""),
            "topic": channel.get("header", ""),
            "purpose": channel.get("purpose", ""),
            "members": stats.get("member_count"),
        }

    def channel_members(self, target: dict, limit: int) -> tuple[list[str], bool]:
        members = (
            self.call(
                "GET",
                f"/channels/{target['channel_id']}/members",
                params={"per_page": min(limit + 1, 200)},
            )
            or []
        )
        ids = [str(member.get("user_id")) for member in members]
        shown = ids[:limit]
        names = self.display_names(shown)
        return [names.get(user_id, user_id) for user_id in shown], len(ids) > limit

    def display_names(self, user_ids: list[str]) -> dict[str, str]:
        """Each user's name (``POST /users/ids``: one call for all of them): the nickname or the
        full name, with the @username people mention; a refused lookup keeps the ids."""
        wanted = list(dict.fromkeys(user_ids))
        if not wanted:
            return {}
        try:
            users = self.call("POST", "/users/ids", json=wanted) or []
        except PlatformError:
            return {}
        names = {}
        for user in users:
            full = " ".join(
                part for part in (user.get("first_name"), user.get("last_name")) if part
            )
            shown = user.get("nickname") or full
            username = user.get("username")
            if username:
                names[str(user.get("id"))] = f"{shown} (@{username})" if shown else f"@{username}"
            elif shown:
                names[str(user.get("id"))] = shown
        return names

    def search_channels(self, query: str, limit: int) -> list[dict]:
        found = (
            self.call("POST", f"/teams/{self.team_id}/channels/search", json={"term": query}) or []
        )
        return [
            {"name": c.get("display_name") or c.get("name", ""), "purpose": c.get("purpose", "")}
            for c in found[:limit]
        ]

    def history(self, target: dict, limit: int) -> tuple[list[dict], bool]:
        body = (
            self.call(
                "GET", f"/channels/{target['channel_id']}/posts", params={"per_page": limit + 1}
            )
            or {}
        )
        posts = body.get("posts") or {}
        order = list(body.get("order") or [])  # newest first
        shown = [posts[pid] for pid in order[:limit] if pid in posts]
        names = self.display_names([str(p["user_id"]) for p in shown if p.get("user_id")])
        messages = [
            {
                "author": names.get(str(post.get("user_id")), str(post.get("user_id", "?"))),
                "at": str(post.get("create_at", "")),
                "text": post.get("message", ""),
            }
            for post in shown
        ]
        messages.reverse()
        return messages, len(order) > limit


def client_for(platform: str, token: str, *, server_url: str = "", team_id: str = ""):
    if platform == Platform.SLACK:
        return SlackClient(token)
    if platform == Platform.TELEGRAM:
        return TelegramClient(token)
    return MattermostClient(token, server_url, team_id)
