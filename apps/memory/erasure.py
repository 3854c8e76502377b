"""Erasure: everything agents here remember about a person, or everything one agent remembers.

Two services (seed 000, "Leerla, y borrarla"):

- :func:`memory_erase_person` — a person clears, from their own profile, everything an agent
  remembers about them; someone with ``members:manage`` may do it for another person. It removes
  the person's notes of every agent of the organization and, for every agent that binds mem0 —
  in its draft or in any retained published version, including earlier mem0 endpoints — that
  person's mem0 space on each endpoint.
- :func:`agent_memory_empty` — "Empty this agent's memory" in the Builder (``agents:edit`` on the
  agent): every note of the agent, for every owner, and its mem0 spaces for all owners on every
  endpoint (listed from mem0 itself, since this deployment keeps no list of them).

mem0 is reached first, outside any transaction; the rows here are then removed and audited in
one transaction (the entry names counts and failures, never content). If credentials are missing,
a provider fails or a listing is incomplete, :class:`MemoryErasureIncomplete` is raised after the
rows are gone: restore access and repeat the operation to complete it.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.db import transaction

from apps.agents.models import Agent
from apps.agents.selectors import can
from apps.audit.services import record_audit
from apps.capabilities.tools.mem0 import (
    Mem0Client,
    Mem0Error,
    agent_prefix,
    base_url_refusal,
    endpoint_of,
    mem0_user_id,
)
from apps.orgs.permissions import MEMBERS_MANAGE, has_org_permission
from apps.vault.models import Secret
from apps.vault.services import SecretUnreadable, secret_reveal

from .models import MemoryNote
from .ownership import StoreOwner
from .services import MemoryErasureIncomplete


@dataclass(frozen=True)
class Mem0Endpoint:
    """One place an agent's mem0 memories may live: an endpoint and the key it was bound with."""

    agent_id: int
    base_url: str
    secret_id: int | None


def mem0_endpoints(agent: Agent) -> list[Mem0Endpoint]:
    """Every mem0 endpoint the agent binds in its draft or any retained version, once each."""
    specs = [agent.draft_spec or {}, *agent.versions.values_list("spec", flat=True)]
    seen: dict[tuple[str, int | None], Mem0Endpoint] = {}
    for spec in specs:
        for binding in (spec or {}).get("capabilities") or []:
            if not isinstance(binding, dict) or binding.get("id") != "memory_mem0":
                continue
            base_url = endpoint_of((binding.get("config") or {}).get("base_url"))
            secret_id = binding.get("secret_id")
            seen.setdefault((base_url, secret_id), Mem0Endpoint(agent.pk, base_url, secret_id))
    return list(seen.values())


def agents_bound_to_mem0(organization) -> list[Agent]:
    """The agents whose memories this page cannot list (Settings → Memory names them)."""
    return [
        agent
        for agent in Agent.objects.filter(organization=organization).order_by("name")
        if mem0_endpoints(agent)
    ]


def _client(endpoint: Mem0Endpoint, organization) -> Mem0Client:
    if base_url_refusal(
        None if endpoint.base_url == endpoint_of(None) else endpoint.base_url,
        settings.MEM0_ALLOWED_HOSTS,
    ):
        raise Mem0Error(f"{endpoint.base_url} is no longer an allowed mem0 host")
    secret = (
        Secret.objects.filter(organization=organization, pk=endpoint.secret_id).first()
        if endpoint.secret_id is not None
        else None
    )
    if secret is None:
        raise Mem0Error("its mem0 API key is missing from the vault")
    try:
        return Mem0Client(endpoint.base_url, secret_reveal(secret))
    except SecretUnreadable as exc:
        raise Mem0Error("its mem0 API key cannot be decrypted") from exc


def _agent_label(agent: Agent, endpoint: Mem0Endpoint) -> str:
    return f"{agent.name} ({endpoint.base_url})"


def _may_erase(actor, organization, person) -> bool:
    return actor is not None and (
        actor.pk == person.pk or has_org_permission(actor, organization, MEMBERS_MANAGE)
    )


def memory_erase_person(*, actor, organization, person) -> dict:
    """Erase what agents of ``organization`` remember about ``person``; returns the counts."""
    if not _may_erase(actor, organization, person):
        raise PermissionDenied(f"only the person themselves or {MEMBERS_MANAGE} may erase memory")
    owner = StoreOwner(user_id=person.pk)
    failures: list[str] = []
    spaces = 0
    for agent in Agent.objects.filter(organization=organization).order_by("pk"):
        for endpoint in mem0_endpoints(agent):
            try:
                _client(endpoint, organization).delete_user(
                    mem0_user_id(organization.pk, agent.pk, owner.mem0_part())
                )
                spaces += 1
            except Mem0Error as exc:
                failures.append(f"{_agent_label(agent, endpoint)}: {exc.sentence}")
    with transaction.atomic():
        notes = MemoryNote.objects.filter(organization=organization, owner_user=person)
        count = notes.count()
        notes.delete()
        record_audit(
            actor=actor,
            organization=organization,
            action="memory.person_erased",
            subject=person,
            details={"notes": count, "mem0_spaces": spaces, "failures": failures},
        )
    if failures:
        raise MemoryErasureIncomplete(failures)
    return {"notes": count, "mem0_spaces": spaces}


def agent_memory_empty(*, actor, agent: Agent) -> dict:
    """Empty one agent's memory for every owner: its notes and all its mem0 spaces."""
    if actor is None or not can(actor, agent, "edit"):
        raise PermissionDenied("agents:edit on this agent is required to empty its memory")
    organization = agent.organization
    failures: list[str] = []
    spaces = 0
    for endpoint in mem0_endpoints(agent):
        try:
            client = _client(endpoint, organization)
            for user_id in client.users_with_prefix(agent_prefix(organization.pk, agent.pk)):
                client.delete_user(user_id)
                spaces += 1
        except Mem0Error as exc:
            failures.append(f"{_agent_label(agent, endpoint)}: {exc.sentence}")
    with transaction.atomic():
        notes = MemoryNote.objects.filter(agent=agent)
        count = notes.count()
        notes.delete()
        record_audit(
            actor=actor,
            organization=organization,
            action="memory.agent_emptied",
            subject=agent,
            details={"notes": count, "mem0_spaces": spaces, "failures": failures},
        )
    if failures:
        raise MemoryErasureIncomplete(failures)
    return {"notes": count, "mem0_spaces": spaces}
