"""Impersonation: an app admin acting as another account, for at most an hour.

Seed 003: an impersonated action names both people. Entries written while it is in force keep
the account as ``actor`` and add ``impersonator`` (the middleware puts the admin in
apps.audit.context, which record_audit reads). ``admin.user.impersonate`` and
``admin.user.impersonation_ended`` record the two ends, with the admin as actor; an expiry
writes nothing, because nobody acted, and neither does logging out (the session is gone).

An impersonation cannot pin a credential to the account it acts as: linking a chat account,
completing an OAuth grant, or typing a bearer token into the member's or the organization's
connection would outlive the hour. Those views call `refuse_while_impersonating(request)`.
"""

from __future__ import annotations

from datetime import timedelta

from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.utils import timezone

from .context import current_impersonator
from .models import ImpersonationSession
from .services import record_audit

MAX_IMPERSONATION = timedelta(hours=1)
SESSION_KEY = "audit_impersonation_id"

ACTION_STARTED = "admin.user.impersonate"
ACTION_ENDED = "admin.user.impersonation_ended"


class ImpersonationRefused(PermissionDenied):
    """Raised for a request that impersonation may not make (a 403)."""


def impersonation_start(
    *, admin, target, session, reason: str = "", duration: timedelta = MAX_IMPERSONATION
) -> ImpersonationSession:
    """Begin acting as `target` in the admin's browser `session`; writes the start entry."""
    if not (admin.is_authenticated and admin.is_active and admin.is_superuser):
        raise ImpersonationRefused("only an app admin may act as another account")
    if session.get(SESSION_KEY):
        raise ImpersonationRefused("stop the current impersonation before starting another")
    if target.pk == admin.pk:
        raise ImpersonationRefused("an app admin cannot impersonate themselves")
    if not target.is_active:
        raise ImpersonationRefused("an inactive account cannot be impersonated")
    # Acting as another app admin would be an escalation no one can review: refuse it.
    if target.is_superuser:
        raise ImpersonationRefused("an app admin cannot be impersonated")
    if duration <= timedelta(0):
        raise ValueError("an impersonation needs a positive duration")
    now = timezone.now()
    with transaction.atomic():
        impersonation = ImpersonationSession.objects.create(
            impersonator=admin,
            target=target,
            started_at=now,
            expires_at=now + min(duration, MAX_IMPERSONATION),
            reason=reason[:500],
        )
        record_audit(
            actor=admin,
            organization=None,
            action=ACTION_STARTED,
            subject=target,
            details={
                "impersonation_id": impersonation.pk,
                "target_user_id": target.pk,
                "expires_at": impersonation.expires_at,
                "reason": impersonation.reason,
            },
            # The admin acts as themselves here; an outer impersonation is refused above.
            impersonator=None,
        )
    session[SESSION_KEY] = impersonation.pk
    return impersonation


def impersonation_stop(*, admin, session) -> ImpersonationSession | None:
    """End the impersonation kept in `session`; writes the end entry if it was still active.

    Returns the ended row, or None when there was none in force (already expired, or none).
    """
    impersonation_id = session.pop(SESSION_KEY, None)
    if impersonation_id is None:
        return None
    now = timezone.now()
    with transaction.atomic():
        claimed = ImpersonationSession.objects.filter(
            pk=impersonation_id, impersonator_id=admin.pk, ended_at__isnull=True, expires_at__gt=now
        ).update(ended_at=now)
        if claimed != 1:
            return None
        impersonation = ImpersonationSession.objects.select_related("target").get(
            pk=impersonation_id
        )
        record_audit(
            actor=admin,
            organization=None,
            action=ACTION_ENDED,
            subject=impersonation.target,
            details={
                "impersonation_id": impersonation.pk,
                "target_user_id": impersonation.target_id,
            },
            impersonator=None,
        )
    return impersonation


def active_impersonation(*, session, real_user) -> ImpersonationSession | None:
    """The impersonation in force for this browser session, or None (forgetting an expired one)."""
    impersonation_id = session.get(SESSION_KEY)
    if impersonation_id is None:
        return None
    impersonation = (
        ImpersonationSession.objects.select_related("target", "impersonator")
        .filter(
            pk=impersonation_id,
            impersonator_id=getattr(real_user, "pk", None),
            ended_at__isnull=True,
        )
        .first()
    )
    still_allowed = (
        impersonation is not None
        and impersonation.expires_at > timezone.now()
        and impersonation.impersonator.is_active
        and impersonation.impersonator.is_superuser
        and impersonation.target.is_active
    )
    if not still_allowed:
        # Expiry writes nothing: nobody acted. The session just stops carrying it.
        session.pop(SESSION_KEY, None)
        return None
    return impersonation


def is_impersonating(request) -> bool:
    return (
        getattr(request, "impersonator", None) is not None or current_impersonator.get() is not None
    )


def refuse_while_impersonating(request) -> None:
    """Raise PermissionDenied (403) when `request` runs under an impersonation.

    Called before linking a chat account, completing an OAuth grant, or storing a bearer token
    in a member's or an organization's connection: each would pin a credential to the account
    that outlives the impersonation's hour.
    """
    if is_impersonating(request):
        raise ImpersonationRefused(
            "not while impersonating: the account's owner links their own accounts and credentials"
        )
