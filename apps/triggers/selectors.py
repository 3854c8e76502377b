"""Every read of triggers a person can reach: the triggers of the agents they can see."""

from __future__ import annotations

from django.db.models import QuerySet

from agenticos import params as parsing
from apps.agents.selectors import agents_visible_to

from .models import Trigger, TriggerFire


def triggers_visible_to(user, organization) -> QuerySet[Trigger]:
    """Triggers of the agents ``user`` may see; another organization's are absent (a 404)."""
    return Trigger.objects.filter(
        organization=organization,
        agent__in=agents_visible_to(user, organization, include_archived=True),
    ).select_related("agent", "created_by", "last_run", "periodic_task")


def trigger_for(user, organization, trigger_id) -> Trigger | None:
    pk = parsing.parse_id("id", str(trigger_id), {})
    if pk is None:
        return None
    return triggers_visible_to(user, organization).filter(pk=pk).first()


def trigger_for_event(trigger_id) -> Trigger | None:
    """The trigger an incoming event names: no caller to scope by — the signature, checked next
    against this trigger's own secret, is the whole authorization."""
    pk = parsing.parse_id("id", str(trigger_id), {})
    if pk is None:
        return None
    return Trigger.objects.filter(pk=pk, kind="event").select_related("secret").first()


def fires_of(trigger: Trigger) -> QuerySet[TriggerFire]:
    return trigger.fires.select_related("run", "fired_by").order_by("-created_at", "-pk")
