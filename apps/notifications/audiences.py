"""Who an alert reaches: a list of roles resolved when the alert is sent, never addresses
(seed 003, "Configurado en el agent").

=============  ==================================================================================
``admins``     the organization's owners and admins, plus the deployment's app admins
``owner``      the agent's owner (its creator), while still a member
``initiator``  whoever started the run; nobody for a run a schedule started
``chosen``     exactly the named members; one who left is skipped quietly
=============  ==================================================================================
"""

from __future__ import annotations

from collections.abc import Iterable

from apps.orgs.choices import Role
from apps.orgs.models import Membership, User

# For an agent without a published spec; a spec carries its own (apps.agents.spec.Alerts).
DEFAULT_AUDIENCES = {
    "budget": ("admins", "owner"),
    "approvals": ("initiator", "admins"),
    "usage": ("admins", "owner"),
}
UNATTENDED_SURFACES = frozenset({"schedule", "event", "webhook"})


def configured_audience(spec, kind: str) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """The spec's audience for ``kind`` (roles, and the members named for ``chosen``), else the
    seed's default when there is no spec."""
    rule = getattr(spec.alerts, kind) if spec is not None else None
    if rule is None:
        return DEFAULT_AUDIENCES[kind], ()
    return tuple(rule.audience), tuple(rule.chosen_user_ids)


def resolve_audience(
    organization, roles: Iterable[str], *, agent=None, run=None, chosen_user_ids: Iterable[int] = ()
) -> list[User]:
    members = Membership.objects.filter(organization=organization).select_related("user")
    member_ids = set(members.values_list("user_id", flat=True))
    people: dict[int, User] = {}
    for role in roles:
        if role == "admins":
            for membership in members.filter(role__in=[Role.OWNER, Role.ADMIN]):
                people[membership.user_id] = membership.user
            for app_admin in User.objects.filter(is_superuser=True, is_active=True):
                people[app_admin.pk] = app_admin
        elif role == "owner":
            owner_id = getattr(agent, "created_by_id", None)
            if owner_id in member_ids:
                people[owner_id] = User.objects.get(pk=owner_id)
        elif role == "initiator":
            if (
                run is not None
                and run.user_id
                and run.surface not in UNATTENDED_SURFACES
                and run.user_id in member_ids
            ):
                people[run.user_id] = run.user
        elif role == "chosen":
            # A chosen member who left resolves to nobody, quietly: a queue must not go mute on a stale id.
            for user in User.objects.filter(
                pk__in=[uid for uid in chosen_user_ids if uid in member_ids]
            ):
                people[user.pk] = user
    return [user for user in people.values() if user.is_active and user.email]
