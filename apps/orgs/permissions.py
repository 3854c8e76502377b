"""The permission catalog: which role holds which permission (see docs/permissions.md).

Views, the API and the admin all ask `has_org_permission`; nothing compares role names anywhere
else, so the table below is the whole policy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .choices import Role

if TYPE_CHECKING:
    from .models import Organization, User

AGENTS_VIEW = "agents:view"
AGENTS_EDIT = "agents:edit"
AGENTS_RUN = "agents:run"
AGENTS_PUBLISH = "agents:publish"
RUNS_VIEW = "runs:view"
APPROVALS_DECIDE = "approvals:decide"
BUDGETS_MANAGE = "budgets:manage"
AUDIT_READ = "audit:read"
MEMBERS_MANAGE = "members:manage"
SKILLS_EDIT = "skills:edit"
CONTEXT_EDIT = "context:edit"
SETTINGS_MANAGE = "settings:manage"

ALL_PERMISSIONS = (
    AGENTS_VIEW,
    AGENTS_EDIT,
    AGENTS_RUN,
    AGENTS_PUBLISH,
    RUNS_VIEW,
    APPROVALS_DECIDE,
    BUDGETS_MANAGE,
    AUDIT_READ,
    MEMBERS_MANAGE,
    SKILLS_EDIT,
    CONTEXT_EDIT,
    SETTINGS_MANAGE,
)

ROLE_PERMISSIONS: dict[str, frozenset[str]] = {
    Role.OWNER: frozenset(ALL_PERMISSIONS),
    Role.ADMIN: frozenset(ALL_PERMISSIONS),
    # Operators keep agents running: they run them, read every run and decide approvals
    # (seed 003: approvals:decide belongs to owner, admin and operator).
    Role.OPERATOR: frozenset({AGENTS_VIEW, AGENTS_RUN, RUNS_VIEW, APPROVALS_DECIDE}),
    # Builders make agents; they read runs to debug them (seed 003: runs:view is held by
    # builder and operator besides the two responsible roles) but decide no approvals.
    Role.BUILDER: frozenset(
        {AGENTS_VIEW, AGENTS_EDIT, AGENTS_RUN, AGENTS_PUBLISH, RUNS_VIEW, SKILLS_EDIT, CONTEXT_EDIT}
    ),
    # Members use agents and see their own runs only.
    Role.MEMBER: frozenset({AGENTS_VIEW, AGENTS_RUN}),
    Role.VIEWER: frozenset({AGENTS_VIEW}),
}


def role_has_permission(role: str, permission: str) -> bool:
    if permission not in ALL_PERMISSIONS:
        raise ValueError(f"unknown permission {permission!r}")
    return permission in ROLE_PERMISSIONS.get(role, frozenset())


def has_org_permission(user: User, organization: Organization | None, permission: str) -> bool:
    """May `user` exercise `permission` inside `organization`?

    Deployment app admins (superusers) hold every permission in every organization; what they do
    is still written to the audit trail (seed 003: an app admin skipping the rules is exactly what
    the trail exists to hold to account).
    """
    if permission not in ALL_PERMISSIONS:
        raise ValueError(f"unknown permission {permission!r}")
    if organization is None or not getattr(user, "is_authenticated", False) or not user.is_active:
        return False
    if user.is_superuser:
        return True
    role = organization.role_of(user)
    return role is not None and permission in ROLE_PERMISSIONS[role]
