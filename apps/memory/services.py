"""Every write of the memory app, each audited in the same transaction (an entry that cannot be
written rolls the change back): context files (``context:edit``) and memory notes (written by
agents through the run's store; stopped, restored and deleted by the person they are about)."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.utils import timezone

from apps.audit.services import record_audit
from apps.capabilities.tools.memory_files import INDEX_NAME, index_without
from apps.orgs.models import User
from apps.orgs.permissions import CONTEXT_EDIT, has_org_permission

from .choices import ContextMode
from .models import (
    BODY_MAX_CHARS,
    MEMORY_BODY_MAX_CHARS,
    MEMORY_NAME_MAX,
    NAME_MAX,
    ContextFile,
    MemoryNote,
)

_UNSET = object()
EDITABLE_FIELDS = ("name", "description", "format", "body", "mode")


def _require(actor, organization) -> None:
    # A None actor is an operator's shell command or the bootstrap: trusted by the host.
    if actor is not None and not has_org_permission(actor, organization, CONTEXT_EDIT):
        raise PermissionDenied(f"{CONTEXT_EDIT} is required")


def _clean(organization, values: dict, *, exclude_pk: int | None = None) -> dict:
    errors: dict[str, list[str]] = {}
    if "name" in values:
        name = " ".join(str(values["name"] or "").split())
        if not name:
            errors["name"] = ["A context file needs a name."]
        elif len(name) > NAME_MAX:
            errors["name"] = [f"At most {NAME_MAX} characters."]
        else:
            clash = ContextFile.objects.filter(organization=organization, name=name)
            if exclude_pk is not None:
                clash = clash.exclude(pk=exclude_pk)
            if clash.exists():
                errors["name"] = [f"The organization already has a context file named {name!r}."]
        values["name"] = name
    if "mode" in values and values["mode"] not in ContextMode.values:
        errors["mode"] = [f"One of: {', '.join(ContextMode.values)}."]
    if "body" in values:
        values["body"] = str(values["body"] or "")
        if len(values["body"]) > BODY_MAX_CHARS:
            errors["body"] = [
                f"At most {BODY_MAX_CHARS:,} characters; a document that needs searching belongs in knowledge."
            ]
    if "format" in values:
        values["format"] = " ".join(str(values["format"] or "").split()) or "markdown"
        if len(values["format"]) > 32:
            errors["format"] = ["At most 32 characters."]
    if "description" in values:
        values["description"] = " ".join(str(values["description"] or "").split())
        if len(values["description"]) > 300:
            errors["description"] = ["At most 300 characters."]
    if errors:
        raise ValidationError(errors)
    return values


def _summary(context_file: ContextFile) -> dict:
    return {
        "name": context_file.name,
        "mode": context_file.mode,
        "format": context_file.format,
        "body_chars": len(context_file.body),
    }


@transaction.atomic
def context_file_create(
    *,
    actor,
    organization,
    name: str,
    body: str = "",
    mode: str = ContextMode.INJECT,
    format: str = "markdown",
    description: str = "",
) -> ContextFile:
    _require(actor, organization)
    values = _clean(
        organization,
        {"name": name, "body": body, "mode": mode, "format": format, "description": description},
    )
    context_file = ContextFile.objects.create(
        organization=organization, created_by=actor, updated_by=actor, **values
    )
    record_audit(
        actor=actor,
        organization=organization,
        action="context.create",
        subject=context_file,
        details=_summary(context_file),
    )
    return context_file


@transaction.atomic
def context_file_update(*, actor, context_file: ContextFile, **changes) -> ContextFile:
    """Change any of name, description, format, body, mode; only what is given is written."""
    unknown = set(changes) - set(EDITABLE_FIELDS)
    if unknown:
        raise ValidationError(
            {field: ["This field cannot be changed."] for field in sorted(unknown)}
        )
    _require(actor, context_file.organization)
    context_file = ContextFile.objects.select_for_update().get(pk=context_file.pk)
    values = _clean(context_file.organization, dict(changes), exclude_pk=context_file.pk)
    changed = [field for field, value in values.items() if getattr(context_file, field) != value]
    if not changed:
        return context_file
    before = {field: getattr(context_file, field) for field in changed if field != "body"}
    for field in changed:
        setattr(context_file, field, values[field])
    context_file.updated_by = actor
    context_file.save(update_fields=[*changed, "updated_by", "updated_at"])
    details = {"changed": changed, "before": before, **_summary(context_file)}
    record_audit(
        actor=actor,
        organization=context_file.organization,
        action="context.update",
        subject=context_file,
        details=details,
    )
    return context_file


@transaction.atomic
def context_file_delete(*, actor, context_file: ContextFile) -> None:
    """Delete a file. Agents that bind it stop receiving it at their next run (the run skips ids
    that name no file); nothing else is touched."""
    _require(actor, context_file.organization)
    record_audit(
        actor=actor,
        organization=context_file.organization,
        action="context.delete",
        subject=context_file,
        details=_summary(context_file),
    )
    context_file.delete()


# --- memory notes -------------------------------------------------------------------------------
#
# An agent writes its notes with tools in the middle of a run (the store's owner is decided by
# apps.memory.ownership, never by the model); the person a note is about stops using, restores or
# deletes it in Settings → Memory; erasure removes everything an agent remembers about a person.


class MemoryErasureIncomplete(Exception):
    """The rows here were removed, but some mem0 space could not be (a provider failed, a key is
    missing, a listing was incomplete). Restore access and repeat the erasure to complete it."""

    def __init__(self, failures: list[str]) -> None:
        self.failures = failures
        super().__init__(
            "Memory erasure is incomplete: "
            + "; ".join(failures)
            + ". Restore access and repeat the erasure to complete it."
        )


def _owner_filter(owner) -> dict:
    if owner.user_id is not None:
        return {"owner_user_id": owner.user_id, "chat_key": ""}
    return {"owner_user__isnull": True, "chat_key": owner.chat_key}


def _note_subject(note: MemoryNote) -> tuple[str, int, str]:
    return ("memory_note", note.pk, note.name)


def _note_details(note: MemoryNote, **more) -> dict:
    # Never the content: an audit entry holding it would be a second copy of what is protected.
    return {
        "name": note.name,
        "agent_id": note.agent_id,
        "store": "person" if note.owner_user_id is not None else "group_chat",
        "chars": len(note.body),
        **more,
    }


def _visible_note(*, agent_id: int, owner, name: str, for_update: bool = False):
    rows = MemoryNote.objects.filter(agent_id=agent_id, name=name, **_owner_filter(owner))
    if for_update:
        rows = rows.select_for_update()
    return rows.filter(suspended_at__isnull=True).first()


@transaction.atomic
def memory_note_write(
    *, organization_id: int, agent_id: int, owner, name: str, body: str, run_id, actor_id
) -> str:
    """An agent writes a note: "created", "replaced", or "revived" — a suspended name stays
    taken, and writing it again revives the row with the new content (what was suspended is
    overwritten; the row now holds what the agent learned since)."""
    if len(body) > MEMORY_BODY_MAX_CHARS or not name or len(name) > MEMORY_NAME_MAX:
        raise ValidationError({"body": f"at most {MEMORY_BODY_MAX_CHARS} characters"})
    note = (
        MemoryNote.objects.select_for_update()
        .filter(agent_id=agent_id, name=name, **_owner_filter(owner))
        .first()
    )
    if note is None:
        note = MemoryNote.objects.create(
            organization_id=organization_id,
            agent_id=agent_id,
            owner_user_id=owner.user_id,
            chat_key=owner.chat_key,
            name=name,
            body=body,
            written_by_run_id=run_id,
        )
        what = "created"
    else:
        what = "revived" if note.suspended_at is not None else "replaced"
        note.body = body
        note.suspended_at = None
        note.written_by_run_id = run_id
        note.save(update_fields=["body", "suspended_at", "written_by_run", "updated_at"])
    record_audit(
        actor=_user(actor_id),
        organization=note.organization,
        action=f"memory.note_{what}",
        subject=_note_subject(note),
        details=_note_details(note, run_id=run_id),
    )
    return what


@transaction.atomic
def memory_note_edit(
    *, agent_id: int, owner, name: str, old: str, new: str, run_id, actor_id
) -> int | None:
    """An exact replacement of text occurring once; returns how often ``old`` occurs (None: no
    such note). Nothing is written unless it occurs exactly once."""
    note = _visible_note(agent_id=agent_id, owner=owner, name=name, for_update=True)
    if note is None:
        return None
    found = note.body.count(old)
    if found != 1:
        return found
    note.body = note.body.replace(old, new, 1)
    note.written_by_run_id = run_id
    note.save(update_fields=["body", "written_by_run", "updated_at"])
    record_audit(
        actor=_user(actor_id),
        organization=note.organization,
        action="memory.note_edited",
        subject=_note_subject(note),
        details=_note_details(note, run_id=run_id),
    )
    return 1


@transaction.atomic
def memory_note_remove_by_agent(*, agent_id: int, owner, name: str, run_id, actor_id) -> bool:
    note = _visible_note(agent_id=agent_id, owner=owner, name=name, for_update=True)
    if note is None:
        return False
    record_audit(
        actor=_user(actor_id),
        organization=note.organization,
        action="memory.note_deleted",
        subject=_note_subject(note),
        details=_note_details(note, run_id=run_id, by="agent"),
    )
    note.delete()
    return True


def _user(user_id):
    return User.objects.filter(pk=user_id).first() if user_id else None


def _require_note_owner(actor, note: MemoryNote) -> None:
    # Nobody manages another person's notes by their role in the organization: only the person
    # the note is about (seed 000, "Leerla, y borrarla").
    if actor is None or note.owner_user_id != actor.pk:
        raise PermissionDenied("only the person a note is about may change it here")


def _trim_index(note: MemoryNote) -> bool:
    """Remove the MEMORY.md lines naming ``note`` from its store's index: the index is injected
    into every request, so a stopped note whose line still describes it would keep reaching the
    model. A line describing it without naming it survives (the trim works on names)."""
    if note.name == INDEX_NAME:
        return False
    index = (
        MemoryNote.objects.select_for_update()
        .filter(
            agent_id=note.agent_id,
            owner_user_id=note.owner_user_id,
            chat_key=note.chat_key,
            name=INDEX_NAME,
        )
        .first()
    )
    if index is None:
        return False
    trimmed = index_without(index.body, note.name)
    if trimmed == index.body:
        return False
    index.body = trimmed
    index.save(update_fields=["body", "updated_at"])
    return True


@transaction.atomic
def memory_note_suspend(*, actor, note: MemoryNote) -> MemoryNote:
    """Stop using a note: no tool lists, reads or edits it, so it stops reaching the model; it
    still exists, to look at and restore. Its index lines go."""
    _require_note_owner(actor, note)
    note = MemoryNote.objects.select_for_update().get(pk=note.pk)
    if note.suspended_at is None:
        note.suspended_at = timezone.now()
        note.save(update_fields=["suspended_at"])
    trimmed = _trim_index(note)
    record_audit(
        actor=actor,
        organization=note.organization,
        action="memory.note_suspended",
        subject=_note_subject(note),
        details=_note_details(note, index_trimmed=trimmed),
    )
    return note


@transaction.atomic
def memory_note_restore(*, actor, note: MemoryNote) -> MemoryNote:
    """Use a note again. Its index line is not put back: the agent writes the index, and this is
    not the place to write in its voice."""
    _require_note_owner(actor, note)
    note = MemoryNote.objects.select_for_update().get(pk=note.pk)
    if note.suspended_at is not None:
        note.suspended_at = None
        note.save(update_fields=["suspended_at"])
    record_audit(
        actor=actor,
        organization=note.organization,
        action="memory.note_restored",
        subject=_note_subject(note),
        details=_note_details(note),
    )
    return note


@transaction.atomic
def memory_note_delete(*, actor, note: MemoryNote) -> None:
    """Delete one's own note for good; its index lines go with it."""
    _require_note_owner(actor, note)
    note = MemoryNote.objects.select_for_update().get(pk=note.pk)
    trimmed = _trim_index(note)
    record_audit(
        actor=actor,
        organization=note.organization,
        action="memory.note_deleted",
        subject=_note_subject(note),
        details=_note_details(note, index_trimmed=trimmed, by="owner"),
    )
    note.delete()


@transaction.atomic
def memory_person_admin_read(*, actor, organization, person, reason: str) -> list[MemoryNote]:
    """A deployment administrator reads a person's notes in one tenant. Audited with the actor,
    the tenant, the subject and the reason, never the content."""
    if actor is None or not actor.is_superuser:
        raise PermissionDenied("only a deployment administrator may read another person's memory")
    notes = list(
        MemoryNote.objects.filter(organization=organization, owner_user=person)
        .select_related("agent")
        .order_by("agent__name", "name")
    )
    record_audit(
        actor=actor,
        organization=organization,
        action="memory.admin_read",
        subject=person,
        details={"reason": reason, "notes": len(notes)},
    )
    return notes
