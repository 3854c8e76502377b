"""Every read of runs a person can reach, scoped to their organization and grants."""

from __future__ import annotations

from django.db.models import QuerySet

from apps.orgs.permissions import RUNS_VIEW, has_org_permission

from .models import Conversation, Run


def runs_visible_to(user, organization) -> QuerySet[Run]:
    """runs:view reads every run of the organization; anyone else only the runs they started."""
    runs = Run.objects.filter(organization=organization).select_related("agent")
    if has_org_permission(user, organization, RUNS_VIEW):
        return runs
    return runs.filter(user_id=user.pk)


def conversations_visible_to(user, organization) -> QuerySet[Conversation]:
    conversations = Conversation.objects.filter(organization=organization)
    if has_org_permission(user, organization, RUNS_VIEW):
        return conversations
    return conversations.filter(user_id=user.pk)
