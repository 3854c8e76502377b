"""Every write of the audit app. `record_audit` is the one other apps call.

Seed 003 ("Auditoría"): the write shares the transaction of the request that acts, so it fails
closed — an entry that cannot be recorded rolls back the action it describes instead of letting
an unaudited privileged mutation land.
"""

from __future__ import annotations

import json
from typing import Any

from django.core.serializers.json import DjangoJSONEncoder
from django.db import connection, models, transaction
from django.utils import timezone

from . import chain as hash_chain
from .context import current_impersonator, current_ip_address
from .models import AuditEntry, chain_name

Subject = models.Model | tuple[str, Any, str]

SUBJECT_LABEL_MAX = 200


def _subject_fields(subject: Subject | None) -> tuple[str, str, str]:
    # Seed 003: a context without a subject raises instead of letting the absence travel.
    if subject is None:
        raise ValueError("an audit entry needs a subject; got None")
    if isinstance(subject, models.Model):
        if subject.pk is None:
            raise ValueError(f"cannot audit an unsaved {subject._meta.label}")
        return subject._meta.label, str(subject.pk), str(subject)[:SUBJECT_LABEL_MAX]
    if isinstance(subject, tuple) and len(subject) == 3:
        kind, identifier, label = subject
        if not kind or identifier is None or identifier == "":
            raise ValueError(f"an audit subject tuple needs a kind and an id; got {subject!r}")
        return str(kind), str(identifier), str(label or "")[:SUBJECT_LABEL_MAX]
    raise TypeError(f"an audit subject is a model instance or (kind, id, label); got {subject!r}")


def _person(user, role: str):
    """A saved, authenticated user, or None; an anonymous request is refused, not blanked."""
    if user is None:
        return None
    if not getattr(user, "is_authenticated", False) or getattr(user, "pk", None) is None:
        raise ValueError(f"the audit {role} must be a saved user or None; got {user!r}")
    return user


def _normalised_details(details: dict | None) -> dict:
    if details is None:
        return {}
    if not isinstance(details, dict):
        raise TypeError(f"audit details must be a dict; got {type(details).__name__}")
    # Decimals, datetimes and UUIDs become strings here, once, so that what is hashed is
    # exactly what JSONB hands back to audit-verify.
    return hash_chain.canonical_json_value(json.loads(json.dumps(details, cls=DjangoJSONEncoder)))


def _lock_chain(chain: str) -> None:
    # Appends to one chain serialize here until the caller's transaction ends, so two writers
    # never extend the same head. The lock is per chain, so organizations never wait on each
    # other.
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", [f"audit:{chain}"])


def record_audit(
    *,
    actor,
    organization,
    action: str,
    subject: Subject,
    details: dict | None = None,
    impersonator=None,
) -> AuditEntry:
    """Append one entry to the organization's chain (the deployment chain when None).

    ``actor`` is the user who acted, or None for exactly the approval expiry sweep and an
    operator's shell command (the ``action`` says which). ``subject`` is a saved model instance
    or a ``(kind, id, label)`` tuple; None raises ValueError. ``impersonator`` defaults to the
    app admin of the impersonation in force for this request (apps.audit.context).

    Runs inside the caller's transaction (a savepoint when there is one), and holds the chain's
    advisory lock until that transaction ends. Any failure propagates, so the caller's action
    rolls back with it.
    """
    if not action or not isinstance(action, str):
        raise ValueError("an audit entry needs an action name")
    subject_type, subject_id, subject_label = _subject_fields(subject)
    actor = _person(actor, "actor")
    impersonator = _person(
        impersonator if impersonator is not None else current_impersonator.get(), "impersonator"
    )
    if impersonator is not None and actor is not None and impersonator.pk == actor.pk:
        # The admin acting as themselves (ending an impersonation, say) impersonates no one.
        impersonator = None
    organization_id = None if organization is None else organization.pk
    if organization is not None and organization_id is None:
        raise ValueError("cannot audit into an unsaved organization")
    chain = chain_name(organization_id)
    fields: dict[str, Any] = {
        "chain": chain,
        "organization_id": organization_id,
        "actor_id": actor.pk if actor else None,
        "actor_label": (getattr(actor, "email", "") or str(actor))[:254] if actor else "",
        "impersonator_id": impersonator.pk if impersonator else None,
        "action": action,
        "subject_type": subject_type,
        "subject_id": subject_id,
        "subject_label": subject_label,
        "details": _normalised_details(details),
        "ip_address": hash_chain.format_ip(current_ip_address.get()),
    }
    with transaction.atomic():
        _lock_chain(chain)
        head = (
            AuditEntry.objects.filter(chain=chain)
            .order_by("-sequence")
            .values_list("sequence", "entry_hash")
            .first()
        )
        sequence, prev_hash = (head[0] + 1, head[1]) if head else (1, hash_chain.GENESIS_HASH)
        # Microseconds are what PostgreSQL keeps; the timestamp hashed is the one stored.
        fields.update(sequence=sequence, prev_hash=prev_hash, created_at=timezone.now())
        fields["entry_hash"] = hash_chain.entry_hash(fields)
        return AuditEntry.objects.create(**fields)
