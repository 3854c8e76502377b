"""Accounts, organizations, memberships and API keys."""

from __future__ import annotations

from typing import ClassVar

from django.contrib.auth.base_user import AbstractBaseUser, BaseUserManager
from django.contrib.auth.models import PermissionsMixin
from django.db import models
from django.utils import timezone

from agenticos.money import default_budget_warn_at

from .choices import Role


class UserManager(BaseUserManager["User"]):
    use_in_migrations = True

    def create_user(self, email: str, password: str | None = None, **extra):
        if not email:
            raise ValueError("an email address is required")
        user = self.model(email=self.normalize_email(email).lower(), **extra)
        user.set_password(password)
        user.save(using=self._db)
        return user

    def create_superuser(self, email: str, password: str | None = None, **extra):
        extra.setdefault("is_staff", True)
        extra.setdefault("is_superuser", True)
        return self.create_user(email, password, **extra)


class User(AbstractBaseUser, PermissionsMixin):
    """A person. Logs in by email; superusers are the deployment's app admins."""

    email = models.EmailField(unique=True)
    full_name = models.CharField(max_length=200, blank=True)
    is_active = models.BooleanField(default=True)
    # Staff may open the Django admin; is_superuser (from PermissionsMixin) makes an app admin.
    is_staff = models.BooleanField(default=False)
    date_joined = models.DateTimeField(default=timezone.now)

    objects = UserManager()

    USERNAME_FIELD = "email"
    EMAIL_FIELD = "email"
    REQUIRED_FIELDS: ClassVar[list[str]] = []

    class Meta:
        ordering = ["email"]

    def __str__(self) -> str:
        return self.email

    @property
    def display_name(self) -> str:
        return self.full_name or self.email


class Organization(models.Model):
    """A tenant: every agent, run, approval, ledger entry and audit entry belongs to one.

    ``monthly_budget_usd`` is the organization-wide cap; NULL means uncapped. It is copied from
    DEFAULT_ORG_MONTHLY_BUDGET_USD once, when the organization is created (services.org_create).
    """

    name = models.CharField(max_length=200)
    slug = models.SlugField(max_length=80, unique=True)
    monthly_budget_usd = models.DecimalField(max_digits=12, decimal_places=2, null=True, blank=True)
    # The fractions of the monthly cap at which the admins are warned before it binds (once per
    # threshold and month); stored as decimal strings, checked by money.budget_warn_at_checked.
    budget_warn_at = models.JSONField(default=default_budget_warn_at, blank=True)
    # Seed 003: the organization's own ceiling on waiving approvals from chat; off by default,
    # changed only by someone with approvals:decide.
    chat_may_waive_approvals = models.BooleanField(default=False)
    # Seed 000 ("Memoria"): off removes every per-person memory store for compliance or privacy;
    # notes kept in group chats stay. Changed by someone with settings:manage.
    allow_personal_memory = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def role_of(self, user) -> str | None:
        """The user's role here, or None; cached on this instance for the request."""
        cache = self.__dict__.setdefault("_role_cache", {})
        if user.pk not in cache:
            cache[user.pk] = (
                Membership.objects.filter(organization=self, user_id=user.pk)
                .values_list("role", flat=True)
                .first()
            )
        return cache[user.pk]


class Membership(models.Model):
    """A person's place in an organization, with exactly one role."""

    organization = models.ForeignKey(
        Organization, on_delete=models.CASCADE, related_name="memberships"
    )
    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.MEMBER)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["organization", "user__email"]
        constraints = [
            models.UniqueConstraint(
                fields=["organization", "user"], name="membership_unique_person_per_org"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.user} in {self.organization} ({self.role})"


class ApiKey(models.Model):
    """A bearer key issued to a member; it acts as that member inside this one organization.

    Only a SHA-256 of the key is stored; the key itself is shown once, at creation. ``prefix``
    (the first characters) lets a person recognise a key in a list without revealing it.
    """

    organization = models.ForeignKey(
        Organization, on_delete=models.CASCADE, related_name="api_keys"
    )
    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="api_keys")
    name = models.CharField(max_length=100)
    prefix = models.CharField(max_length=16)
    key_hash = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    # Optional: a key for a job that ends (a contractor's, a CI run's) stops working by itself.
    # NULL means it works until revoked.
    expires_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            # The settings page lists an organization's keys, newest first.
            models.Index(fields=["organization", "-created_at"], name="apikey_org_created_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @property
    def is_active(self) -> bool:
        if self.revoked_at is not None:
            return False
        return self.expires_at is None or self.expires_at > timezone.now()


class Invitation(models.Model):
    """An offer of membership sent to an e-mail address. Nobody becomes a member of an
    organization without saying yes: the person accepts, signed in as that address (or creating
    the account for it from the link), and only then is a Membership written.

    Only a SHA-256 of the token is stored; the token itself travels in the e-mail. States:
    pending (``accepted_at`` and ``revoked_at`` empty, ``expires_at`` ahead) → accepted, or
    revoked (by a manager, or replaced by a newer invitation to the same address); a pending one
    past ``expires_at`` is expired and can no longer be accepted.
    """

    organization = models.ForeignKey(
        Organization, on_delete=models.CASCADE, related_name="invitations"
    )
    email = models.EmailField()
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.MEMBER)
    invited_by = models.ForeignKey(
        User, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    token_hash = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    accepted_at = models.DateTimeField(null=True, blank=True)
    accepted_by = models.ForeignKey(
        User, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        constraints = [
            # One open invitation per address and organization: inviting again replaces it.
            models.UniqueConstraint(
                fields=["organization", "email"],
                condition=models.Q(accepted_at__isnull=True, revoked_at__isnull=True),
                name="invitation_one_open_per_email",
            ),
        ]
        indexes = [
            # The members page and GET /invitations/: an organization's invitations, newest first.
            models.Index(fields=["organization", "-created_at"], name="invitation_org_created_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.email} to {self.organization} ({self.role})"

    @property
    def is_open(self) -> bool:
        return self.accepted_at is None and self.revoked_at is None

    @property
    def is_expired(self) -> bool:
        return self.is_open and self.expires_at <= timezone.now()

    @property
    def status(self) -> str:
        if self.accepted_at is not None:
            return "accepted"
        if self.revoked_at is not None:
            return "revoked"
        return "expired" if self.expires_at <= timezone.now() else "pending"
