"""A binding's platform, what an unlinked sender gets, and what became of an inbound message."""

from django.db import models


class Platform(models.TextChoices):
    SLACK = "slack", "Slack"
    TELEGRAM = "telegram", "Telegram"
    MATTERMOST = "mattermost", "Mattermost"


class UnlinkedSenders(models.TextChoices):
    """What a message from a platform account nobody linked gets.

    ``run``: it runs under the binding, as no person — no personal memory store, no questions
    (nobody here can answer as them), its approvals decided in the queue. ``require_link``: no
    run; the bot asks the sender to link their account first."""

    RUN = "run", "Run as no one (no personal memory)"
    REQUIRE_LINK = "require_link", "Ask them to link their account first"


class MessageOutcome(models.TextChoices):
    """An inbound message's fate. ``queued``: accepted, waiting for the worker. ``run``: it
    started a run. ``answer``: it answered the question a parked run asked in this thread.
    ``link``: the sender asked to link and was sent a private link. ``limited``: the sender was
    over the binding's per-sender limit and was told when to try again. ``refused``: no run, the
    bot said why (an unlinked sender on a binding that requires a link, a linked person who may
    not run the agent, a binding switched off)."""

    QUEUED = "queued", "Queued"
    RUN = "run", "Started a run"
    ANSWER = "answer", "Answered a question"
    LINK = "link", "Sent a link"
    LIMITED = "limited", "Rate limited"
    REFUSED = "refused", "Refused"


# The sandbox's session_scope values a binding may override the spec's with (seed 000,
# "Sandbox"): blank keeps the spec's.
SANDBOX_SCOPES = ("run", "conversation", "channel", "user", "agent")
