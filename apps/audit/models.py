"""The audit log and the impersonation sessions it records.

An `AuditEntry` is written only by `apps.audit.services.record_audit` and never changed after:
the table carries a trigger refusing UPDATE and DELETE (migration 0001), and every row is a link
of a hash chain that `agenticos audit-verify` recomputes (apps/audit/chain.py). See
docs/audit.md for what that does and does not protect against.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

DEPLOYMENT_CHAIN = "deployment"


def chain_name(organization_id: int | None) -> str:
    """The chain an entry of this organization (None: the deployment) is appended to."""
    return DEPLOYMENT_CHAIN if organization_id is None else f"org:{organization_id}"


class AuditEntry(models.Model):
    """One privileged action: who did what to which subject, in which organization.

    ``actor`` is None for exactly two writers, and ``action`` says which: the approval expiry
    sweep and an operator's shell command. ``impersonator`` is the app admin behind ``actor``
    when the action was taken under an impersonation, None otherwise (never back-filled).

    The foreign keys carry no database constraint and do nothing on delete: the trail outlives
    the organizations and people it names, and nulling a column would break the entry's hash.
    ``actor_label`` keeps the actor's email as it was when the entry was written.

    ``chain``/``sequence`` place the entry in its chain ("org:<id>" or "deployment", numbered
    from 1 without gaps); ``prev_hash`` is the previous entry's ``entry_hash`` (64 zeros for the
    first) and ``entry_hash`` is SHA-256 over the canonical encoding in apps/audit/chain.py.
    """

    chain = models.CharField(max_length=40, editable=False)
    sequence = models.PositiveBigIntegerField(editable=False)
    created_at = models.DateTimeField(editable=False)
    organization = models.ForeignKey(
        "orgs.Organization",
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        null=True,
        blank=True,
        related_name="audit_entries",
        editable=False,
    )
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        null=True,
        blank=True,
        related_name="audit_entries",
        editable=False,
    )
    actor_label = models.CharField(max_length=254, blank=True, editable=False)
    impersonator = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        null=True,
        blank=True,
        related_name="audit_entries_as_impersonator",
        editable=False,
    )
    action = models.CharField(max_length=100, editable=False)
    subject_type = models.CharField(max_length=100, editable=False)
    subject_id = models.CharField(max_length=64, editable=False)
    subject_label = models.CharField(max_length=200, blank=True, editable=False)
    details = models.JSONField(default=dict, blank=True, editable=False)
    # Stored for investigations; not part of the read model (GET /audit, exports).
    ip_address = models.GenericIPAddressField(null=True, blank=True, editable=False)
    prev_hash = models.CharField(max_length=64, editable=False)
    entry_hash = models.CharField(max_length=64, editable=False)

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name = "audit entry"
        verbose_name_plural = "audit entries"
        constraints = [
            # Two writers can never fork a chain: the second insert of a position fails.
            models.UniqueConstraint(
                fields=["chain", "sequence"], name="audit_entry_chain_position"
            ),
        ]
        indexes = [
            # GET /audit, the console page and every export: one organization, a time window.
            models.Index(fields=["organization", "created_at"], name="audit_org_created_idx"),
            # The action filter within an organization.
            models.Index(
                fields=["organization", "action", "created_at"], name="audit_org_action_idx"
            ),
            # The actor filter within an organization.
            models.Index(
                fields=["organization", "actor", "created_at"], name="audit_org_actor_idx"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.action} on {self.subject_type}:{self.subject_id} ({self.chain} #{self.sequence})"


class ImpersonationSession(models.Model):
    """An app admin acting as another account, for at most an hour.

    Started and ended through apps/audit/impersonation.py, each end writing an audit entry;
    it lives in the admin's browser session (the row id is kept in the session). Transitions:
    active (``ended_at`` NULL and ``expires_at`` in the future) → ended (the admin stopped it,
    ``ended_at`` set, entry ``admin.user.impersonation_ended``) or → expired (time passed;
    nothing is written, because nobody acted).
    """

    impersonator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="impersonations_made"
    )
    target = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="impersonations_suffered"
    )
    started_at = models.DateTimeField()
    expires_at = models.DateTimeField()
    ended_at = models.DateTimeField(null=True, blank=True)
    reason = models.CharField(max_length=500, blank=True)

    class Meta:
        ordering = ["-started_at"]
        indexes = [
            # The admin page lists an admin's impersonations, newest first.
            models.Index(fields=["impersonator", "-started_at"], name="impersonation_admin_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.impersonator} as {self.target} from {self.started_at:%Y-%m-%d %H:%M}"
