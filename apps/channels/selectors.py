"""Every read of chat bindings a person can reach: the bindings of the agents they can see."""

from __future__ import annotations

from django.db.models import QuerySet

from agenticos import params as parsing
from apps.agents.selectors import agents_visible_to

from .choices import Platform
from .models import AccountLink, Binding


def bindings_visible_to(user, organization) -> QuerySet[Binding]:
    """Bindings of the agents ``user`` may see; another organization's are absent (a 404)."""
    return Binding.objects.filter(
        organization=organization,
        agent__in=agents_visible_to(user, organization, include_archived=True),
    ).select_related("agent", "created_by", "bot_token", "verification_secret")


def binding_for(user, organization, binding_id) -> Binding | None:
    pk = parsing.parse_id("id", str(binding_id), {})
    if pk is None:
        return None
    return bindings_visible_to(user, organization).filter(pk=pk).first()


def binding_for_webhook(binding_id, platform: str) -> Binding | None:
    """The binding an inbound webhook names: no caller to scope by — the platform's signature,
    checked next against this binding's own verification secret, is the whole authorization."""
    pk = parsing.parse_id("id", str(binding_id), {})
    if pk is None:
        return None
    return (
        Binding.objects.filter(pk=pk, platform=platform)
        .select_related("organization", "agent", "verification_secret", "bot_token")
        .first()
    )


def links_of(user) -> QuerySet[AccountLink]:
    """A person's own linked chat accounts."""
    return AccountLink.objects.filter(user=user).select_related("organization")


def bindings_to_stream() -> dict[int, tuple]:
    """The Mattermost bindings whose event stream should be open (enabled ones), each with what
    its socket was opened from — the server, the bot token and its last rotation — so a change
    to any of them reopens the socket. No caller to scope by: the listener is the deployment's
    own process, and each socket authenticates with its own binding's token."""
    rows = Binding.objects.filter(platform=Platform.MATTERMOST, enabled=True).values_list(
        "pk", "server_url", "bot_token_id", "bot_token__rotated_at"
    )
    return {pk: (server_url, token_id, rotated_at) for pk, server_url, token_id, rotated_at in rows}


def binding_for_stream(binding_id: int, *, enabled_only: bool = False) -> Binding | None:
    """The binding a socket belongs to, as the admission path needs it."""
    bindings = Binding.objects.filter(pk=binding_id, platform=Platform.MATTERMOST)
    if enabled_only:
        bindings = bindings.filter(enabled=True)
    return bindings.select_related("organization", "agent", "bot_token").first()
