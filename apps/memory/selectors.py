"""Reads of the memory app, scoped to the caller: context files to the caller's organization
(another organization's file is invisible, the same as one that never existed); memory notes to
the person they are about, and to the one store a run's audience reaches."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from django.db.models import Q, QuerySet
from django.db.models.functions import Length

from agenticos.params import as_id
from apps.capabilities.tools.mem0 import Mem0Access, mem0_user_id
from apps.capabilities.tools.memory_files import INDEX_NAME, MemoryAccess
from apps.orgs.models import User

from .models import ContextFile, MemoryNote
from .ownership import memory_scope
from .stores import DatabaseNoteStore


def context_files_for(organization) -> QuerySet[ContextFile]:
    """The organization's files, without bodies (the list never carries them)."""
    return (
        ContextFile.objects.filter(organization=organization)
        .select_related("created_by", "updated_by")
        .defer("body")
        .annotate(body_chars=Length("body"))
        .order_by("name", "pk")
    )


def context_file_for(organization, pk) -> ContextFile | None:
    """One file of the organization, body included; None for another organization's or none."""
    pk = as_id(pk)
    if pk is None:
        return None
    return (
        ContextFile.objects.filter(organization=organization, pk=pk)
        .select_related("created_by", "updated_by")
        .annotate(body_chars=Length("body"))
        .first()
    )


@dataclass(frozen=True)
class ContextFileSnapshot:
    """A bound file as a run receives it: plain data, read once before the run."""

    id: int
    name: str
    body: str
    mode: str
    format: str
    description: str


def context_files_for_run(
    organization_id: int, context_ids: Iterable[int]
) -> list[ContextFileSnapshot]:
    """The files an agent binds, in the spec's order. Ids of another organization, or of a file
    deleted since publishing, are skipped: a run never reads across organizations."""
    ids = [int(i) for i in context_ids]
    if not ids:
        return []
    rows = {
        row.pk: row
        for row in ContextFile.objects.filter(organization_id=organization_id, pk__in=ids).only(
            "id", "name", "body", "mode", "format", "description"
        )
    }
    seen: set[int] = set()
    snapshots = []
    for pk in ids:
        row = rows.get(pk)
        if row is None or pk in seen:
            continue
        seen.add(pk)
        snapshots.append(
            ContextFileSnapshot(
                id=row.pk,
                name=row.name,
                body=row.body,
                mode=row.mode,
                format=row.format,
                description=row.description,
            )
        )
    return snapshots


def missing_context_ids(organization_id: int, context_ids: Iterable[int]) -> list[int]:
    """The ids that name no file of the organization (for publish validation)."""
    ids = [int(i) for i in context_ids]
    if not ids:
        return []  # nothing to look for (and a query that cannot match is still built)
    found = set(
        ContextFile.objects.filter(organization_id=organization_id, pk__in=ids).values_list(
            "pk", flat=True
        )
    )
    return [i for i in ids if i not in found]


# --- memory notes -------------------------------------------------------------------------------


def memory_for_run(*, organization, agent_id: int, run_id: int | None, audience) -> MemoryAccess:
    """The one store a run touches (``ownership.memory_scope``), with MEMORY.md read now where it
    is injected (one-to-one only). A run never reaches another store."""
    scope = memory_scope(audience, personal_memory_allowed=organization.allow_personal_memory)
    if scope.owner is None:
        return MemoryAccess(store=None, reason=scope.reason)
    store = DatabaseNoteStore(
        organization_id=organization.pk,
        agent_id=agent_id,
        owner=scope.owner,
        run_id=run_id,
        actor_id=audience.user_id,
    )
    index = store.read_note(INDEX_NAME) if scope.inject_index else None
    return MemoryAccess(store=store, writable=scope.writable, reason=scope.reason, index=index)


def mem0_for_run(*, organization, agent_id: int, audience) -> Mem0Access:
    """memory_mem0 follows the very same rule: the scope becomes mem0's user_id."""
    scope = memory_scope(audience, personal_memory_allowed=organization.allow_personal_memory)
    if scope.owner is None:
        return Mem0Access(user_id=None, reason=scope.reason)
    return Mem0Access(
        user_id=mem0_user_id(organization.pk, agent_id, scope.owner.mem0_part()),
        writable=scope.writable,
        reason=scope.reason,
    )


def memory_notes_of_person(user, organization) -> QuerySet[MemoryNote]:
    """Settings → Memory: every note agents of this organization wrote about ``user`` (the
    person's own store; group chats' notes belong to the chat), with the agent that wrote it."""
    return (
        MemoryNote.objects.filter(organization=organization, owner_user=user, chat_key="")
        .select_related("agent")
        .annotate(body_chars=Length("body"))
        .order_by("agent__name", "agent_id", "name")
    )


def memory_note_of_person(user, organization, pk) -> MemoryNote | None:
    """One of the person's own notes; None for anyone else's (invisible, not forbidden)."""
    pk = as_id(pk)
    if pk is None:
        return None
    return memory_notes_of_person(user, organization).filter(pk=pk).first()


def memory_subject(organization, pk):
    """A person whose memory may be named in this organization: a member, or someone agents here
    still keep notes about (a person who left); None otherwise (a 404, like an id that never
    existed)."""
    pk = as_id(pk)
    if pk is None:
        return None
    return (
        User.objects.filter(pk=pk)
        .filter(
            Q(memberships__organization=organization) | Q(memory_notes__organization=organization)
        )
        .distinct()
        .first()
    )
