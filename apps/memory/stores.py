"""The memory store a run's tools are handed: one store's notes, reached through the memory app's
selectors and services (the tools themselves never touch the database).

The runner builds it before the run from the scope ``apps.memory.ownership`` decided, and the
``memory_files`` tools call its blocking methods through the run host's ``blocking``.
"""

from __future__ import annotations

from dataclasses import dataclass

from apps.capabilities.tools.memory_files import NoteLine

from . import services
from .models import MemoryNote
from .ownership import StoreOwner


@dataclass(frozen=True)
class DatabaseNoteStore:
    """The notes of one agent for one owner (a person or a group chat)."""

    organization_id: int
    agent_id: int
    owner: StoreOwner
    run_id: int | None = None
    # Who the run is for (recorded as the actor of the agent's writes in the audit trail).
    actor_id: int | None = None

    def _rows(self):
        return MemoryNote.objects.filter(
            organization_id=self.organization_id,
            agent_id=self.agent_id,
            suspended_at__isnull=True,
            **services._owner_filter(self.owner),
        )

    def list_notes(self) -> list[NoteLine]:
        return [
            NoteLine(name=row.name, chars=len(row.body), updated_at=row.updated_at)
            for row in self._rows().only("name", "body", "updated_at").order_by("name")
        ]

    def read_note(self, name: str) -> str | None:
        return self._rows().filter(name=name).values_list("body", flat=True).first()

    def write_note(self, name: str, body: str) -> str:
        return services.memory_note_write(
            organization_id=self.organization_id,
            agent_id=self.agent_id,
            owner=self.owner,
            name=name,
            body=body,
            run_id=self.run_id,
            actor_id=self.actor_id,
        )

    def edit_note(self, name: str, old: str, new: str) -> int | None:
        return services.memory_note_edit(
            agent_id=self.agent_id,
            owner=self.owner,
            name=name,
            old=old,
            new=new,
            run_id=self.run_id,
            actor_id=self.actor_id,
        )

    def delete_note(self, name: str) -> bool:
        return services.memory_note_remove_by_agent(
            agent_id=self.agent_id,
            owner=self.owner,
            name=name,
            run_id=self.run_id,
            actor_id=self.actor_id,
        )
