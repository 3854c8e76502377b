"""Chat channels' fixtures: a fake of each platform on 127.0.0.1, the binding's vault secrets,
Celery eager (the webhook's task runs here on commit), and edits not held back by the
platform's interval (a test of the interval sets it itself)."""

from __future__ import annotations

import json
import time

import pytest
from django.test import Client

from apps.channels.services import binding_create
from apps.channels.verification import slack_signature
from apps.vault.services import secret_create
from tests.runs.factories import published_agent

from .fakes import FakePlatform

SIGNING_SECRET = "slack-signing-secret"
TELEGRAM_SECRET = "telegram-secret-token"
MATTERMOST_TOKEN = "mattermost-webhook-token"


@pytest.fixture
def eager_celery():
    from agenticos.celery import app

    eager = app.conf.task_always_eager
    app.conf.task_always_eager = True
    yield app
    app.conf.task_always_eager = eager


@pytest.fixture
def fake(request, settings):
    """``fake("slack")``: the platform's fake, with the deployment pointed at it."""
    made = []

    def make(platform: str) -> FakePlatform:
        server = FakePlatform(platform)
        made.append(server)
        if platform != "mattermost":
            settings.CHANNEL_API_BASE_URLS = {
                **settings.CHANNEL_API_BASE_URLS,
                platform: server.url,
            }
        else:
            settings.OUTBOUND_ALLOW = ["127.0.0.1"]
        settings.CHANNEL_EDIT_INTERVAL_SECONDS = {platform: 0}
        return server

    yield make
    for server in made:
        server.close()


@pytest.fixture
def agent(org, builder):
    return published_agent(org, name="Helper", created_by=builder)


@pytest.fixture
def memory_agent(org, builder):
    """An agent with a memory store and conversation search: what a sender's identity decides."""
    return published_agent(
        org,
        name="Rememberer",
        created_by=builder,
        capabilities=[{"id": "memory_files"}, {"id": "conversation_search"}],
    )


def channel_secret(org, name, value):
    return secret_create(actor=None, organization=org, name=name, purpose="channel", value=value)


def make_binding(org, builder, agent, platform, *, server_url="", **kw):
    verification = {"slack": SIGNING_SECRET, "telegram": TELEGRAM_SECRET}.get(
        platform, MATTERMOST_TOKEN
    )
    return binding_create(
        actor=builder,
        organization=org,
        agent=agent,
        platform=platform,
        name=f"{platform} bot",
        bot_token_secret_id=channel_secret(org, f"{platform} token", f"{platform}-bot-token").pk,
        verification_secret_id=channel_secret(org, f"{platform} verification", verification).pk,
        server_url=server_url,
        **kw,
    )


# --- what each platform sends ---------------------------------------------------------------


def slack_event(
    text,
    *,
    event_id="Ev1",
    channel="C0815",
    user="U42",
    ts="1700000000.000100",
    thread_ts=None,
    channel_type="channel",
    kind="app_mention",
):
    event = {
        "type": kind,
        "channel": channel,
        "user": user,
        "text": text,
        "ts": ts,
        "channel_type": channel_type,
    }
    if thread_ts:
        event["thread_ts"] = thread_ts
    return {"type": "event_callback", "team_id": "T042", "event_id": event_id, "event": event}


def post_slack(binding, payload, *, secret=SIGNING_SECRET, timestamp=None, **headers):
    body = json.dumps(payload).encode()
    timestamp = int(time.time()) if timestamp is None else timestamp
    return Client().post(
        f"/channels/slack/{binding.pk}/events/",
        data=body,
        content_type="application/json",
        HTTP_X_SLACK_REQUEST_TIMESTAMP=str(timestamp),
        HTTP_X_SLACK_SIGNATURE=slack_signature(secret, body, timestamp),
        **headers,
    )


def telegram_update(
    text, *, update_id=1, chat_id=42, user_id=42, chat_type="private", message_id=7
):
    return {
        "update_id": update_id,
        "message": {
            "message_id": message_id,
            "from": {"id": user_id, "is_bot": False, "first_name": "Ada", "username": "ada"},
            "chat": {"id": chat_id, "type": chat_type, "title": "Ops"},
            "text": text,
        },
    }


def post_telegram(binding, payload, *, secret=TELEGRAM_SECRET):
    return Client().post(
        f"/channels/telegram/{binding.pk}/webhook/",
        data=json.dumps(payload),
        content_type="application/json",
        HTTP_X_TELEGRAM_BOT_API_SECRET_TOKEN=secret,
    )


def mattermost_post(text, *, post_id="p1", token=MATTERMOST_TOKEN, user_id="u42"):
    return {
        "token": token,
        "team_id": "team1",
        "channel_id": "chan1",
        "channel_name": "ops",
        "user_id": user_id,
        "user_name": "ada",
        "post_id": post_id,
        "text": f"@helper {text}",
        "trigger_word": "@helper",
    }


def post_mattermost(binding, payload, *, form=False):
    if form:
        from urllib.parse import urlencode

        return Client().post(
            f"/channels/mattermost/{binding.pk}/webhook/",
            data=urlencode(payload),
            content_type="application/x-www-form-urlencoded",
        )
    return Client().post(
        f"/channels/mattermost/{binding.pk}/webhook/",
        data=json.dumps(payload),
        content_type="application/json",
    )


@pytest.fixture(autouse=True)
def one_sender_limit_window(monkeypatch):
    """Every test here counts a sender's messages in one window that no test straddles.

    The limit counts per fixed one-minute window (apps/channels/limits.py); a test whose two
    messages land either side of a minute's turn (the first one's run took 5 s on a loaded
    machine) saw both admitted. A window of 10^9 s next turns in 2033, and what is tested — the
    count, the limit, the answer to the sender — is the same at any window length.
    """
    from apps.channels import limits

    monkeypatch.setattr(limits, "WINDOW_SECONDS", 10**9)
