"""Every read of chat bindings a person can reach: the bindings of the agents they can see."""

from __future__ import annotations

from django.db.models import QuerySet

from agenticos import params as parsing
from apps.agents.selectors import agents_visible_to

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
