"""Every write to context files: each names its actor, needs ``context:edit`` and is audited in
the same transaction, so an entry that cannot be written rolls the change back."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction

from apps.audit.services import record_audit
from apps.orgs.permissions import CONTEXT_EDIT, has_org_permission

from .choices import ContextMode
from .models import BODY_MAX_CHARS, NAME_MAX, ContextFile

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
