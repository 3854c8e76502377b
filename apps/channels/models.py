"""Chat bindings (exposures), the messages they admitted, the threads they keep, and the links
between platform accounts and people."""

from __future__ import annotations

from django.db import models

from .choices import MessageOutcome, Platform, UnlinkedSenders


class Binding(models.Model):
    """Where an agent is available: one bot on one platform, connected to one published agent.

    A Slack app in a workspace, a Telegram bot, a Mattermost bot on a server. Its credentials are
    vault secrets named by id: ``bot_token`` (what the bot posts, edits and looks up with) and
    ``verification_secret`` (what proves an inbound webhook came from the platform: Slack's
    signing secret, the ``secret_token`` given to Telegram's ``setWebhook``, the token Mattermost
    shows for an outgoing webhook). ``prompt`` is appended to the agent's instructions for every
    run the binding admits; ``channel_tools`` is that capability's configuration
    (``{"tools": [...], "default_limit": 20}``), granted here and never in a spec;
    ``sandbox_scope`` overrides the spec's ``session_scope`` (blank: the spec's).

    ``created_by`` is who bound it (``agents:publish``). Runs of unlinked senders run as no one,
    but the binding stays theirs: a message is refused once they may no longer run the agent.
    """

    organization = models.ForeignKey(
        "orgs.Organization", on_delete=models.CASCADE, related_name="chat_bindings"
    )
    agent = models.ForeignKey(
        "agents.Agent", on_delete=models.CASCADE, related_name="chat_bindings"
    )
    platform = models.CharField(max_length=16, choices=Platform.choices)
    name = models.CharField(max_length=120)
    bot_token = models.ForeignKey(
        "vault.Secret", on_delete=models.PROTECT, related_name="+", null=True, blank=True
    )
    verification_secret = models.ForeignKey(
        "vault.Secret", on_delete=models.PROTECT, related_name="+", null=True, blank=True
    )
    # Mattermost only: the server the bot lives on (self-hosted, so there is no default).
    server_url = models.CharField(max_length=300, blank=True)
    prompt = models.TextField(blank=True)
    sandbox_scope = models.CharField(max_length=16, blank=True)
    channel_tools = models.JSONField(default=dict, blank=True)
    unlinked_senders = models.CharField(
        max_length=16, choices=UnlinkedSenders.choices, default=UnlinkedSenders.RUN
    )
    # Messages one sender may send per minute; NULL takes CHANNEL_SENDER_MESSAGES_PER_MINUTE.
    sender_limit_per_minute = models.PositiveIntegerField(null=True, blank=True)
    enabled = models.BooleanField(default=True)
    # Why the platform side was switched off (empty when a person disabled it, or it runs).
    disabled_reason = models.CharField(max_length=300, blank=True)
    created_by = models.ForeignKey(
        "orgs.User", on_delete=models.SET_NULL, null=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name", "pk"]
        indexes = [
            # The Builder's "Where this agent is available" list.
            models.Index(fields=["agent", "name"], name="chat_binding_agent_name_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.platform})"


class ChatThread(models.Model):
    """One chat the bot answers in, and the conversation that keeps its turns.

    ``chat_key`` is the platform's identity of the chat: for Slack ``slack:T:C:thread_ts`` (a
    thread is a chat, so a busy channel is many conversations), for Telegram ``telegram:chat``
    (``:topic`` in a forum), for Mattermost ``mattermost:team:channel:root``. ``group_chat_key``
    is the room's identity — the channel, not the thread — set on the conversation for a group
    chat (its own memory store, conversation search refused) and blank for a direct message.
    """

    binding = models.ForeignKey(Binding, on_delete=models.CASCADE, related_name="threads")
    chat_key = models.CharField(max_length=255)
    conversation = models.OneToOneField(
        "runs.Conversation", on_delete=models.CASCADE, related_name="chat_thread"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["binding", "chat_key"], name="chat_thread_binding_key_unique"
            ),
        ]

    def __str__(self) -> str:
        return self.chat_key


class ChannelMessage(models.Model):
    """One inbound message a binding accepted, deduplicated by the platform's own id.

    ``delivery_id`` is Slack's ``event_id``, Telegram's ``update_id``, Mattermost's ``post_id``:
    unique per binding, so a platform retry (Slack retries an event it got no quick answer for)
    is refused by the database itself and never becomes a second run. ``event`` is the parsed
    message (chat, thread, sender, text) the worker acts on; ``reply_ids`` are the bot's own
    messages that answered it (posted, then edited as the text streamed).
    """

    binding = models.ForeignKey(Binding, on_delete=models.CASCADE, related_name="messages")
    delivery_id = models.CharField(max_length=128)
    sender_id = models.CharField(max_length=128)
    event = models.JSONField(default=dict)
    outcome = models.CharField(
        max_length=16, choices=MessageOutcome.choices, default=MessageOutcome.QUEUED
    )
    detail = models.CharField(max_length=500, blank=True)
    run = models.ForeignKey(
        "runs.Run", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    thread = models.ForeignKey(
        ChatThread, on_delete=models.SET_NULL, null=True, blank=True, related_name="messages"
    )
    reply_ids = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        constraints = [
            models.UniqueConstraint(
                fields=["binding", "delivery_id"], name="channel_message_delivery_unique"
            ),
        ]
        indexes = [
            # The run's message (the relay of a resumed run finds its thread).
            models.Index(fields=["run"], name="channel_message_run_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.binding_id}:{self.delivery_id} ({self.outcome})"


class AccountLink(models.Model):
    """A platform account linked to a person of the organization, by the person themselves.

    ``account_key`` names the account on its platform: ``T042:U0815`` for Slack (a user id is
    per workspace), the numeric id for Telegram, ``host:user_id`` for Mattermost (per server).
    A linked sender's runs run as the person, so they reach that person's one-to-one memory from
    a direct message, their approvals and questions are theirs.
    """

    organization = models.ForeignKey(
        "orgs.Organization", on_delete=models.CASCADE, related_name="chat_account_links"
    )
    platform = models.CharField(max_length=16, choices=Platform.choices)
    account_key = models.CharField(max_length=255)
    display_name = models.CharField(max_length=200, blank=True)
    user = models.ForeignKey("orgs.User", on_delete=models.CASCADE, related_name="chat_accounts")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["organization", "platform", "account_key"],
                name="chat_account_link_unique",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.platform}:{self.account_key} -> {self.user_id}"


class LinkRequest(models.Model):
    """A private link the bot sent in a direct message to someone who wrote ``link``.

    Only the SHA-256 of the token is stored; the token itself is in the link, and the link only
    in that direct message. Opened while signed in and confirmed, it links the account to the
    person signed in; it expires after CHANNEL_LINK_EXPIRY_MINUTES and works once.
    """

    binding = models.ForeignKey(Binding, on_delete=models.CASCADE, related_name="link_requests")
    token_hash = models.CharField(max_length=64, unique=True)
    account_key = models.CharField(max_length=255)
    display_name = models.CharField(max_length=200, blank=True)
    expires_at = models.DateTimeField()
    used_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"link {self.account_key} via {self.binding_id}"


__all__ = [
    "AccountLink",
    "Binding",
    "ChannelMessage",
    "ChatThread",
    "LinkRequest",
    "MessageOutcome",
    "Platform",
    "UnlinkedSenders",
]
