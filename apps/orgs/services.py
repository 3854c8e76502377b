"""Every write to organizations, memberships, invitations and API keys. Each names its actor and is audited
in the same transaction, so an entry that cannot be written rolls the change back."""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta
from decimal import Decimal
from typing import cast

from django.conf import settings
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.mail import send_mail
from django.db import transaction
from django.template.loader import render_to_string
from django.utils import timezone
from django.utils.text import slugify

from agenticos.money import budget_warn_at_checked
from apps.audit.services import record_audit

from .choices import Role
from .models import ApiKey, Invitation, Membership, Organization, User
from .permissions import BUDGETS_MANAGE, MEMBERS_MANAGE, SETTINGS_MANAGE, has_org_permission

API_KEY_PREFIX = "aos_"


def _require(actor: User | None, organization: Organization, permission: str) -> None:
    # A None actor is an operator's shell command (bootstrap, create-org): trusted by the host.
    if actor is not None and not has_org_permission(actor, organization, permission):
        raise PermissionDenied(f"{permission} is required")


def _unique_slug(name: str) -> str:
    base = slugify(name)[:60] or "org"
    slug, n = base, 2
    while Organization.objects.filter(slug=slug).exists():
        slug, n = f"{base}-{n}", n + 1
    return slug


@transaction.atomic
def organization_create(
    *, actor: User | None, name: str, owner: User, slug: str | None = None
) -> Organization:
    """Create an organization with its owner.

    The monthly cap is copied from DEFAULT_ORG_MONTHLY_BUDGET_USD now and never again: changing
    the setting later leaves existing organizations alone (an empty setting means uncapped).
    """
    organization = Organization.objects.create(
        name=name,
        slug=slug or _unique_slug(name),
        monthly_budget_usd=settings.DEFAULT_ORG_MONTHLY_BUDGET_USD,
    )
    Membership.objects.create(organization=organization, user=owner, role=Role.OWNER)
    record_audit(
        actor=actor,
        organization=organization,
        action="org.create" if actor else "org.create.shell",
        subject=organization,
        details={
            "name": name,
            "owner_user_id": owner.pk,
            "monthly_budget_usd": _money(organization.monthly_budget_usd),
        },
    )
    _run_setup_hooks(organization, owner)
    return organization


# Higher layers (agents: the AgenticOS template agent) register here to give an organization
# what it starts with; orgs is a leaf and imports none of them (STYLE.md, "Which way the imports
# point"). Hooks run on creation and again at every bootstrap, so they must be idempotent.
_ORGANIZATION_SETUP_HOOKS: list = []


_ORGANIZATION_FIGURES_HOOKS: list = []


def on_organization_figures(hook) -> None:
    """``hook(organization, reader) -> dict``: figures another app adds to the organization's own
    row (GET /orgs/{id}) — the spend app's month to date beside the cap it is measured against.
    Orgs is the ground floor and reads no spend itself (STYLE.md, "Which way the imports point")."""
    if hook not in _ORGANIZATION_FIGURES_HOOKS:
        _ORGANIZATION_FIGURES_HOOKS.append(hook)


def organization_figures(organization: Organization, reader) -> dict:
    figures: dict = {}
    for hook in _ORGANIZATION_FIGURES_HOOKS:
        figures.update(hook(organization, reader))
    return figures


def on_organization_setup(hook) -> None:
    if hook not in _ORGANIZATION_SETUP_HOOKS:
        _ORGANIZATION_SETUP_HOOKS.append(hook)


def _run_setup_hooks(organization: Organization, owner: User) -> None:
    for hook in _ORGANIZATION_SETUP_HOOKS:
        hook(organization=organization, owner=owner)


def _money(value: Decimal | None) -> str | None:
    return None if value is None else str(value)


@transaction.atomic
def organization_update(
    *,
    actor: User,
    organization: Organization,
    name: str | None = None,
    monthly_budget_usd: Decimal | None | object = ...,
    chat_may_waive_approvals: bool | None = None,
    allow_personal_memory: bool | None = None,
    budget_warn_at: list | None = None,
) -> Organization:
    """Change the organization's settings; each field is gated by its own permission."""
    organization = Organization.objects.select_for_update().get(pk=organization.pk)
    changed: dict[str, dict] = {}
    if name is not None and name != organization.name:
        _require(actor, organization, SETTINGS_MANAGE)
        changed["name"] = {"from": organization.name, "to": name}
        organization.name = name
    if monthly_budget_usd is not ... and monthly_budget_usd != organization.monthly_budget_usd:
        # ``...`` is the only value outside Decimal | None the signature admits (it means "leave
        # the cap alone"), and it was ruled out just above.
        monthly_budget_usd = cast(Decimal | None, monthly_budget_usd)
        _require(actor, organization, BUDGETS_MANAGE)
        if monthly_budget_usd is not None and monthly_budget_usd < 0:
            raise ValidationError(
                {"monthly_budget_usd": "must be zero or more, or empty for no cap"}
            )
        changed["monthly_budget_usd"] = {
            "from": _money(organization.monthly_budget_usd),
            "to": _money(monthly_budget_usd),
        }
        organization.monthly_budget_usd = monthly_budget_usd
    if budget_warn_at is not None:
        try:
            fractions = [str(value) for value in budget_warn_at_checked(budget_warn_at)]
        except ValueError as exc:
            raise ValidationError({"budget_warn_at": str(exc)}) from None
        if fractions != organization.budget_warn_at:
            _require(actor, organization, BUDGETS_MANAGE)
            changed["budget_warn_at"] = {"from": organization.budget_warn_at, "to": fractions}
            organization.budget_warn_at = fractions
    if (
        chat_may_waive_approvals is not None
        and chat_may_waive_approvals != organization.chat_may_waive_approvals
    ):
        # Seed 003: the switch is changed by someone with approvals:decide.
        _require(actor, organization, "approvals:decide")
        changed["chat_may_waive_approvals"] = {
            "from": organization.chat_may_waive_approvals,
            "to": chat_may_waive_approvals,
        }
        organization.chat_may_waive_approvals = chat_may_waive_approvals
    if (
        allow_personal_memory is not None
        and allow_personal_memory != organization.allow_personal_memory
    ):
        _require(actor, organization, SETTINGS_MANAGE)
        changed["allow_personal_memory"] = {
            "from": organization.allow_personal_memory,
            "to": allow_personal_memory,
        }
        organization.allow_personal_memory = allow_personal_memory
    if changed:
        organization.save(update_fields=[*changed])
        action = (
            "budget.change"
            if set(changed) <= {"monthly_budget_usd", "budget_warn_at"}
            else "org.update"
        )
        record_audit(
            actor=actor,
            organization=organization,
            action=action,
            subject=organization,
            details=changed,
        )
    return organization


class InvitationNotFound(Exception):
    """No open invitation with this token for this person: the same answer as a token that never
    existed (a 404), so a link forwarded to someone else tells them nothing."""


class InvitationClosed(Exception):
    """The invitation was accepted already (a second decision, 409), or it expired (410)."""

    def __init__(self, message: str, *, expired: bool) -> None:
        super().__init__(message)
        self.expired = expired


INVITED_SENTENCE = (
    "An invitation was sent to {email}. They become a member as {role} when they accept it; it "
    "expires in {days} days."
)


def invitation_url(token: str) -> str:
    return f"{settings.AGENTICOS_PUBLIC_URL.rstrip('/')}/invitations/{token}/"


def _send_invitation(invitation: Invitation, token: str) -> None:
    """The same e-mail whether the address has an account or not: the link's page says what to
    do (sign in, or choose a password for a new account)."""
    inviter = invitation.invited_by.display_name if invitation.invited_by else "An administrator"
    context = {
        "inviter": inviter,
        "organization": invitation.organization.name,
        "role": invitation.get_role_display(),
        "url": invitation_url(token),
        "expires_at": invitation.expires_at,
    }
    subject = render_to_string("orgs/invitation_subject.txt", context).strip()
    body = render_to_string("orgs/invitation_email.txt", context)
    send_mail(subject, body, None, [invitation.email])


@transaction.atomic
def invitation_create(
    *, actor: User | None, organization: Organization, email: str, role: str
) -> tuple[Invitation, str]:
    """Invite an address to join as ``role``; returns the invitation and its token (e-mailed
    after commit, never shown to the inviter).

    Whether the address has an account is neither looked at nor answered: the inviter learns no
    id and no name, and an unknown address gets no account until its owner accepts. Inviting an
    address again replaces its open invitation (the old link stops working)."""
    _require(actor, organization, MEMBERS_MANAGE)
    if role not in Role.values:
        raise ValidationError({"role": f"must be one of {', '.join(Role.values)}"})
    _guard_owner_grant(actor, organization, role)
    email = (email or "").strip().lower()
    if not email:
        raise ValidationError({"email": "must not be empty"})
    # The inviter sees their own organization's members anyway: no account is revealed here.
    if Membership.objects.filter(organization=organization, user__email__iexact=email).exists():
        raise ValidationError({"email": f"{email} is already a member of {organization.name}"})
    now = timezone.now()
    replaced = Invitation.objects.filter(
        organization=organization,
        email=email,
        accepted_at__isnull=True,
        revoked_at__isnull=True,
    ).update(revoked_at=now)
    token = secrets.token_urlsafe(32)
    invitation = Invitation.objects.create(
        organization=organization,
        email=email,
        role=role,
        invited_by=actor,
        token_hash=hash_api_key(token),
        expires_at=now + timedelta(days=settings.INVITATION_EXPIRY_DAYS),
    )
    record_audit(
        actor=actor,
        organization=organization,
        action="invitation.create",
        subject=invitation,
        details={
            "email": email,
            "role": role,
            "expires_at": invitation.expires_at.isoformat(),
            "replaced": replaced,
        },
    )
    transaction.on_commit(lambda: _send_invitation(invitation, token))
    return invitation, token


def invitation_for_token(token: str) -> Invitation | None:
    """The invitation a link names (any state), or None."""
    if not token or len(token) > 200:
        return None
    return (
        Invitation.objects.select_related("organization", "invited_by")
        .filter(token_hash=hash_api_key(token))
        .first()
    )


def _open_invitation(token: str, *, for_email: str | None) -> Invitation:
    invitation = (
        Invitation.objects.select_for_update()
        .select_related("organization")
        .filter(token_hash=hash_api_key(token or ""))
        .first()
    )
    if invitation is None or invitation.revoked_at is not None:
        raise InvitationNotFound
    if for_email is not None and invitation.email.lower() != for_email.strip().lower():
        raise InvitationNotFound
    if invitation.accepted_at is not None:
        raise InvitationClosed("This invitation was already accepted.", expired=False)
    if invitation.expires_at <= timezone.now():
        raise InvitationClosed(
            "This invitation expired; ask for a new one.",
            expired=True,
        )
    return invitation


@transaction.atomic
def invitation_accept(*, actor: User, token: str) -> Membership:
    """The invited person says yes, signed in as the invited address; only now are they a
    member. Someone else's token is not found (404); a second acceptance is a 409; an expired
    invitation is refused (410)."""
    invitation = _open_invitation(token, for_email=actor.email)
    return _join(invitation, actor)


def _join(invitation: Invitation, user: User) -> Membership:
    organization = invitation.organization
    membership, created = Membership.objects.get_or_create(
        organization=organization, user=user, defaults={"role": invitation.role}
    )
    invitation.accepted_at = timezone.now()
    invitation.accepted_by = user
    invitation.save(update_fields=["accepted_at", "accepted_by"])
    record_audit(
        actor=user,
        organization=organization,
        action="invitation.accept",
        subject=invitation,
        details={"email": invitation.email, "role": invitation.role},
    )
    if created:
        record_audit(
            actor=user,
            organization=organization,
            action="membership.add",
            subject=membership,
            details={
                "user_id": user.pk,
                "email": user.email,
                "role": membership.role,
                "invitation_id": invitation.pk,
                "invited_by_user_id": invitation.invited_by_id,
            },
        )
    return membership


@transaction.atomic
def invitation_accept_new_account(
    *, token: str, password: str, full_name: str = ""
) -> tuple[User, Membership]:
    """Accept from the link with a new account for the invited address (holding the link is
    proof of the mailbox). An address that already has an account signs in instead."""
    invitation = _open_invitation(token, for_email=None)
    if User.objects.filter(email__iexact=invitation.email).exists():
        raise ValidationError({"email": "this address has an account: sign in to accept"})
    user = User(email=invitation.email, full_name=(full_name or "").strip()[:200])
    try:
        validate_password(password, user)
    except ValidationError as error:
        raise ValidationError({"password": error.messages}) from None
    user.set_password(password)
    user.save()
    return user, _join(invitation, user)


@transaction.atomic
def invitation_revoke(*, actor: User, invitation: Invitation) -> Invitation:
    """Withdraw an open invitation (its link stops working); a closed one is a 409."""
    _require(actor, invitation.organization, MEMBERS_MANAGE)
    claimed = Invitation.objects.filter(
        pk=invitation.pk, accepted_at__isnull=True, revoked_at__isnull=True
    ).update(revoked_at=timezone.now())
    if not claimed:
        raise InvitationClosed("This invitation is no longer open.", expired=False)
    invitation.refresh_from_db(fields=["revoked_at"])
    record_audit(
        actor=actor,
        organization=invitation.organization,
        action="invitation.revoke",
        subject=invitation,
        details={"email": invitation.email, "role": invitation.role},
    )
    return invitation


def _guard_owner_grant(actor: User | None, organization: Organization, role: str) -> None:
    # Only an owner (or an app admin, or the shell) makes another owner: an admin who could
    # promote themselves to owner would hold the one role that cannot be taken back from them.
    if role == Role.OWNER and actor is not None and not actor.is_superuser:
        if organization.role_of(actor) != Role.OWNER:
            raise PermissionDenied("only an owner can grant the owner role")


def _guard_last_owner(membership: Membership) -> None:
    if membership.role != Role.OWNER:
        return
    owners = Membership.objects.select_for_update().filter(
        organization_id=membership.organization_id, role=Role.OWNER
    )
    if owners.count() <= 1:
        raise ValidationError({"role": "an organization keeps at least one owner"})


@transaction.atomic
def membership_change_role(*, actor: User, membership: Membership, role: str) -> Membership:
    organization = membership.organization
    _require(actor, organization, MEMBERS_MANAGE)
    if role not in Role.values:
        raise ValidationError({"role": f"must be one of {', '.join(Role.values)}"})
    if role == membership.role:
        return membership
    _guard_owner_grant(actor, organization, role)
    if membership.role == Role.OWNER:
        _guard_owner_grant(actor, organization, Role.OWNER)
        _guard_last_owner(membership)
    previous = membership.role
    membership.role = role
    membership.save(update_fields=["role"])
    record_audit(
        actor=actor,
        organization=organization,
        action="membership.role_change",
        subject=membership,
        details={"user_id": membership.user_id, "from": previous, "to": role},
    )
    return membership


@transaction.atomic
def membership_remove(*, actor: User, membership: Membership) -> None:
    organization = membership.organization
    _require(actor, organization, MEMBERS_MANAGE)
    if membership.role == Role.OWNER:
        _guard_owner_grant(actor, organization, Role.OWNER)
        _guard_last_owner(membership)
    record_audit(
        actor=actor,
        organization=organization,
        action="membership.remove",
        subject=membership,
        details={"user_id": membership.user_id, "role": membership.role},
    )
    # A removed person's keys stop working with their membership.
    ApiKey.objects.filter(
        organization=organization, user_id=membership.user_id, revoked_at__isnull=True
    ).update(revoked_at=timezone.now())
    membership.delete()


def hash_api_key(raw_key: str) -> str:
    return hashlib.sha256(raw_key.encode()).hexdigest()


@transaction.atomic
def api_key_create(
    *,
    actor: User | None,
    organization: Organization,
    user: User,
    name: str,
    expires_at=None,
) -> tuple[ApiKey, str]:
    """Issue a key for `user` in `organization`; returns the row and the key, shown this once.

    A key is minted by the person it acts as. Nobody — an admin, an owner, an app admin — holds a
    credential that speaks as someone else: a key minted for the owner would let an admin act as
    the owner (grant the owner role, be named as the owner in the trail). The one exception is
    the operator's shell command (`actor=None`, `agenticos create-api-key`), audited as such.
    """
    if actor is not None and actor.pk != user.pk:
        raise PermissionDenied("an API key is minted by the person it acts as")
    if organization.role_of(user) is None:
        raise ValidationError({"user": f"{user.email} is not a member of {organization.name}"})
    if expires_at is not None and expires_at <= timezone.now():
        raise ValidationError({"expires_at": "must be in the future"})
    raw_key = API_KEY_PREFIX + secrets.token_urlsafe(32)
    api_key = ApiKey.objects.create(
        organization=organization,
        user=user,
        name=name or "API key",
        prefix=raw_key[: len(API_KEY_PREFIX) + 6],
        key_hash=hash_api_key(raw_key),
        expires_at=expires_at,
    )
    record_audit(
        actor=actor,
        organization=organization,
        action="api_key.create" if actor else "api_key.create.shell",
        subject=api_key,
        details={
            "user_id": user.pk,
            "name": api_key.name,
            "prefix": api_key.prefix,
            "expires_at": expires_at.isoformat() if expires_at else None,
        },
    )
    return api_key, raw_key


@transaction.atomic
def api_key_revoke(*, actor: User, api_key: ApiKey) -> ApiKey:
    if actor.pk != api_key.user_id:
        _require(actor, api_key.organization, MEMBERS_MANAGE)
    claimed = ApiKey.objects.filter(pk=api_key.pk, revoked_at__isnull=True).update(
        revoked_at=timezone.now()
    )
    if claimed:
        api_key.refresh_from_db(fields=["revoked_at"])
        record_audit(
            actor=actor,
            organization=api_key.organization,
            action="api_key.revoke",
            subject=api_key,
            details={"user_id": api_key.user_id, "prefix": api_key.prefix},
        )
    return api_key


def api_key_authenticate(raw_key: str) -> ApiKey | None:
    """The active key matching `raw_key`, with `last_used_at` stamped; None otherwise."""
    api_key = (
        ApiKey.objects.select_related("user", "organization")
        .filter(key_hash=hash_api_key(raw_key), revoked_at__isnull=True, user__is_active=True)
        .first()
    )
    if api_key is None:
        return None
    if api_key.expires_at is not None and api_key.expires_at <= timezone.now():
        return None
    # Still a member? A key outlives nothing its issuer lost.
    if api_key.organization.role_of(api_key.user) is None and not api_key.user.is_superuser:
        return None
    now = timezone.now()
    ApiKey.objects.filter(pk=api_key.pk).update(last_used_at=now)
    api_key.last_used_at = now
    return api_key


@transaction.atomic
def bootstrap(
    *, org_name: str, admin_email: str, admin_password: str | None
) -> tuple[Organization, User, str | None]:
    """Create the first organization and its owner; idempotent.

    Returns the organization, the owner and the generated password (None when it was given or
    the owner already existed, so a password is printed once, on the first boot only).
    """
    generated = None
    owner = User.objects.filter(email__iexact=admin_email).first()
    if owner is None:
        if admin_password is None:
            generated = admin_password = secrets.token_urlsafe(12)
        owner = User.objects.create_superuser(email=admin_email, password=admin_password)
    slug = slugify(org_name) or "default"
    organization = Organization.objects.filter(slug=slug).first()
    if organization is None:
        organization = organization_create(actor=None, name=org_name, owner=owner, slug=slug)
    else:
        if organization.role_of(owner) is None:
            Membership.objects.create(organization=organization, user=owner, role=Role.OWNER)
        _run_setup_hooks(organization, owner)
    return organization, owner, generated


@transaction.atomic
def login_lockout_record(*, username: str, ip_address: str | None) -> None:
    """Write django-axes' lockout of a sign-in to the trail.

    One entry in the deployment chain (the address may be guessing many accounts), and one in
    each organization the account belongs to, so its owners see that someone is trying their
    member's password. No actor: nobody signed in; the subject is the account tried (or the
    name typed, when no account has it).
    """
    username = (username or "").strip().lower()
    user = User.objects.filter(email__iexact=username).first() if username else None
    subject = user if user is not None else ("account", username[:200] or "(blank)", username[:200])
    details = {
        "username": username[:200],
        "ip_address": ip_address or "",
        "failure_limit": settings.AXES_FAILURE_LIMIT,
        "cool_off_minutes": int(settings.AXES_COOLOFF_TIME.total_seconds() // 60),
    }
    record_audit(
        actor=None, organization=None, action="auth.lockout", subject=subject, details=details
    )
    if user is not None:
        for organization in Organization.objects.filter(memberships__user=user):
            record_audit(
                actor=None,
                organization=organization,
                action="auth.lockout",
                subject=user,
                details=details,
            )
