"""Every read of agents a person can reach: one scoped path for the API, the console and the admin.

Who may do what with an agent is decided in two layers, checked here and nowhere else:

1. the organization role (``agents:view`` / ``agents:edit`` / ``agents:run`` / ``agents:publish``
   from ``apps.orgs.permissions``), which covers every agent of the organization;
2. django-guardian object grants on one agent (``view_agent``, ``change_agent``, ``run_agent``,
   ``publish_agent``), which widen a person's reach to that agent only — a viewer who may edit
   the one agent their team owns.

An agent of another organization is invisible, never forbidden: callers get ``None`` / an empty
queryset and answer 404.
"""

from __future__ import annotations

from django.db.models import QuerySet
from guardian.shortcuts import get_objects_for_user

from agenticos.params import as_id
from apps.orgs import permissions as perms
from apps.orgs.permissions import has_org_permission

from .models import Agent, AgentStatus, AgentVersion, ModelProfile, SandboxConnection

# An agent action → (organization permission, guardian codename).
ACTIONS: dict[str, tuple[str, str]] = {
    "view": (perms.AGENTS_VIEW, "view_agent"),
    "edit": (perms.AGENTS_EDIT, "change_agent"),
    "run": (perms.AGENTS_RUN, "run_agent"),
    "publish": (perms.AGENTS_PUBLISH, "publish_agent"),
}
GRANT_CODENAMES = tuple(codename for _, codename in ACTIONS.values())


def _member(user, organization) -> bool:
    return bool(
        organization is not None
        and getattr(user, "is_authenticated", False)
        and (user.is_superuser or organization.role_of(user) is not None)
    )


def agents_visible_to(user, organization, *, include_archived: bool = False) -> QuerySet[Agent]:
    """The agents of ``organization`` that ``user`` may see.

    ``agents:view`` shows every agent of the organization; without it, only the agents the person
    holds an object grant on (any grant implies seeing the agent).
    """
    if not _member(user, organization):
        return Agent.objects.none()
    agents = Agent.objects.filter(organization=organization).select_related("current_version")
    if not include_archived:
        agents = agents.filter(status=AgentStatus.ACTIVE)
    if has_org_permission(user, organization, perms.AGENTS_VIEW):
        return agents
    return get_objects_for_user(
        user,
        [f"agents.{c}" for c in GRANT_CODENAMES],
        klass=agents,
        any_perm=True,
        accept_global_perms=False,
    )


def agent_for(user, organization, agent_id, *, include_archived: bool = True) -> Agent | None:
    """One agent the person may see, or None (missing, another organization's, or invisible)."""
    agent_id = as_id(agent_id)
    if agent_id is None:
        return None
    return (
        agents_visible_to(user, organization, include_archived=include_archived)
        .filter(pk=agent_id)
        .first()
    )


def can(user, agent: Agent, action: str) -> bool:
    """May ``user`` do ``action`` (view, edit, run, publish) on ``agent``?"""
    org_permission, codename = ACTIONS[action]
    organization = agent.organization
    if not _member(user, organization):
        return False
    if has_org_permission(user, organization, org_permission):
        return True
    return user.has_perm(f"agents.{codename}", agent)


def agents_runnable_by(user, organization) -> QuerySet[Agent]:
    """The agents ``user`` may start a run of: published, not archived, and either every agent
    (``agents:run``) or the ones they hold a ``run_agent`` grant on. The chat's agent picker, the
    runs API and ``run_create`` all answer "may this person run it?" from this and :func:`can`,
    the same rule publish validation applies to a delegate."""
    agents = agents_visible_to(user, organization).filter(current_version__isnull=False)
    if has_org_permission(user, organization, perms.AGENTS_RUN):
        return agents
    return get_objects_for_user(user, "agents.run_agent", klass=agents, accept_global_perms=False)


def delegate_pins(agent: Agent, spec: dict) -> list[dict]:
    """The delegates ``spec`` pins, each with the version it pins and the one its agent publishes
    now: a pin does not move on its own, so a fix published by a delegate's author reaches this
    agent only when someone moves the pin and republishes (seed 003) — the Builder shows it."""
    pins = (spec or {}).get("subagents") or (spec or {}).get("delegates") or []
    # A pin without an id matches no agent (Django drops None from an __in list the same way).
    ids = [
        pin["agent_id"] for pin in pins if isinstance(pin, dict) and pin.get("agent_id") is not None
    ]
    targets = {
        target.pk: target
        for target in Agent.objects.filter(organization=agent.organization, pk__in=ids)
        .select_related("current_version")
        .only("pk", "name", "status", "current_version__number")
    }
    rows = []
    for pin in pins:
        target = targets.get(pin.get("agent_id"))
        current = target.current_version.number if target and target.current_version else None
        pinned = pin.get("version")
        rows.append(
            {
                "agent_id": pin.get("agent_id"),
                "name": target.name if target else f"Agent {pin.get('agent_id')} (gone)",
                "archived": bool(target and target.status == AgentStatus.ARCHIVED),
                "pinned": pinned,
                "current": current,
                "behind": pinned is not None and current is not None and pinned < current,
                "mode": pin.get("mode"),
            }
        )
    return rows


def inline_specialists(spec: dict) -> list[dict]:
    """The specialists defined inside the subagents binding of ``spec`` (the Builder offers to
    keep each as a draft agent of its own)."""
    binding = next(
        (b for b in (spec or {}).get("capabilities") or [] if b.get("id") == "subagents"), None
    )
    inline = ((binding or {}).get("config") or {}).get("inline") or []
    return [s for s in inline if isinstance(s, dict) and s.get("name")]


def versions_of(agent: Agent) -> QuerySet[AgentVersion]:
    return (
        AgentVersion.objects.filter(agent=agent).select_related("published_by").order_by("-number")
    )


def version_for(agent: Agent, number) -> AgentVersion | None:
    try:
        number = int(number)
    except (TypeError, ValueError):
        return None
    return versions_of(agent).filter(number=number).first()


def template_agent_for(organization) -> Agent | None:
    return Agent.objects.filter(organization=organization, is_template=True).first()


def model_profiles_for(organization) -> QuerySet[ModelProfile]:
    return ModelProfile.objects.filter(organization=organization).select_related("secret")


def sandbox_connections_for(organization) -> QuerySet[SandboxConnection]:
    return SandboxConnection.objects.filter(organization=organization).select_related("secret")
