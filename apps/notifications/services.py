"""Sending alerts: e-mail through Django's backend plus an in-app notification.

Two rules that are not negotiated (seed 003): a person's opt-outs subtract last, and the
organization cap's alert goes to the admins whatever any spec says. Sending never blocks a run
and never raises into the caller: a run that already ended must not fail again because SMTP was
down — each public function logs the failure and returns.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from decimal import Decimal

from django.conf import settings
from django.core.mail import send_mail
from django.db import transaction
from django.db.models import Sum
from django.utils import timezone

from apps.orgs.permissions import APPROVALS_DECIDE, ROLE_PERMISSIONS, has_org_permission

from .audiences import configured_audience, resolve_audience
from .links import agent_link, approvals_queue_link
from .models import AlertKind, Channel, Notification, NotificationOptOut

logger = logging.getLogger(__name__)


def deciding_roles() -> list[str]:
    """Which roles approve, read from the permission catalog (never listed beside it)."""
    return [
        str(role)
        for role, permissions in ROLE_PERMISSIONS.items()
        if APPROVALS_DECIDE in permissions
    ]


def _roles_sentence() -> str:
    roles = deciding_roles()
    return (
        ", ".join(roles[:-1]) + f" or {roles[-1]}"
        if len(roles) > 1
        else (roles[0] if roles else "nobody")
    )


def _deliver(
    *, organization, kind: str, users: Iterable, subject: str, body: str, link: str = ""
) -> int:
    users = list(users)
    opted_out = set(
        NotificationOptOut.objects.filter(user__in=users, kind=kind).values_list(
            "user_id", "channel"
        )
    )
    sent = 0
    for user in users:
        if (user.pk, Channel.IN_APP) not in opted_out:
            Notification.objects.create(
                organization=organization,
                user=user,
                kind=kind,
                title=subject[:300],
                body=body,
                link=link,
            )
        if (user.pk, Channel.EMAIL) not in opted_out:
            try:
                send_mail(subject, body, settings.DEFAULT_FROM_EMAIL, [user.email])
                sent += 1
            except Exception:  # SMTP down or refusing: logged, never raised into the run
                logger.exception("alert %s to user %s could not be sent", kind, user.pk)
    return sent


def notify_run_parked(*, run_id: int) -> int:
    """The approvals alert, as two e-mails split by approvals:decide: the request with the link to
    the queue, and for everyone else the fact — held, not failed; who can approve — with no link and
    no claim that anyone else was told."""
    try:
        from apps.approvals.models import ToolApproval
        from apps.runs.models import Run

        run = Run.objects.select_related("organization", "agent", "agent_version", "user").get(
            pk=run_id
        )
        organization, agent = run.organization, run.agent
        tools = sorted(
            set(
                ToolApproval.objects.filter(run=run, status="pending").values_list(
                    "tool_name", flat=True
                )
            )
        )
        if not tools:
            return 0
        spec = run.agent_version.frozen_spec
        audience = resolve_audience(
            organization, configured_audience(spec, "approvals"), agent=agent, run=run
        )
        deciders = [u for u in audience if has_org_permission(u, organization, APPROVALS_DECIDE)]
        others = [u for u in audience if u not in deciders]
        calls = ", ".join(tools)
        sent = _deliver(
            organization=organization,
            kind=AlertKind.APPROVALS,
            users=deciders,
            subject=f"{agent.name} is waiting on your approval",
            body=(
                f"Run #{run.pk} of {agent.name} in {organization.name} parked on a tool call that needs a "
                f"person's approval: {calls}.\n\nReview the request: {approvals_queue_link(organization)}\n"
            ),
            link=approvals_queue_link(organization),
        )
        sent += _deliver(
            organization=organization,
            kind=AlertKind.APPROVALS,
            users=others,
            subject=f"{agent.name} is held for approval",
            body=(
                f"Run #{run.pk} of {agent.name} in {organization.name} is held, not failed: it is waiting "
                f"for approval of a tool call ({calls}). Approving it is for an {_roles_sentence()} of the "
                "organization. Nothing is asked of you.\n"
            ),
        )
        return sent
    except Exception:
        logger.exception("approvals alert for run %s failed", run_id)
        return 0


def notify_agent_budget_reached(*, agent, spent_usd=None, limit_usd=None) -> int:
    """The agent's own cap bound: the spec's budget audience (default admins and the agent's owner)."""
    try:
        spec = agent.current_version.frozen_spec if agent.current_version_id else None
        roles = configured_audience(spec, "budget")
        users = resolve_audience(agent.organization, roles, agent=agent)
        return _deliver(
            organization=agent.organization,
            kind=AlertKind.BUDGET,
            users=users,
            subject=f"{agent.name} reached its monthly budget",
            body=(
                f"{agent.name} in {agent.organization.name} reached its own monthly cap"
                f"{f' of ${limit_usd}' if limit_usd is not None else ''}; its runs stop before the next model "
                f"request until the cap is raised or the month turns.\n\nThe cap is edited on the agent: {agent_link(agent)}\n"
            ),
            link=agent_link(agent),
        )
    except Exception:
        logger.exception("budget alert for agent %s failed", getattr(agent, "pk", None))
        return 0


def notify_org_cap_reached(*, organization, limit_usd=None) -> int:
    """The organization cap's alert goes to the admins, whatever any agent's spec says."""
    try:
        from .links import link

        users = resolve_audience(organization, ["admins"])
        return _deliver(
            organization=organization,
            kind=AlertKind.BUDGET,
            users=users,
            subject=f"{organization.name} reached its monthly budget",
            body=(
                f"Every agent of {organization.name} stops before its next model request: the organization's "
                f"monthly cap{f' of ${limit_usd}' if limit_usd is not None else ''} is reached.\n\n"
                f"{link(f'/orgs/{organization.pk}/', organization)}\n"
            ),
            link=link(f"/orgs/{organization.pk}/", organization),
        )
    except Exception:
        logger.exception(
            "organization cap alert for organization %s failed", getattr(organization, "pk", None)
        )
        return 0


def send_usage_report(*, organization, since, until, roles=("admins",)) -> int:
    """The usage report over a window. An organization that ran nothing gets no report (seed 003:
    a "0 runs, $0.00" e-mail teaches people to filter the one that matters)."""
    try:
        from apps.runs.models import Run

        runs = Run.objects.filter(
            organization=organization,
            parent_run__isnull=True,
            created_at__gte=since,
            created_at__lte=until,
        )
        count = runs.count()
        if not count:
            return 0
        cost = runs.aggregate(total=Sum("cost_usd"))["total"] or Decimal("0")
        users = resolve_audience(organization, roles)
        return _deliver(
            organization=organization,
            kind=AlertKind.USAGE,
            users=users,
            subject=f"{organization.name}: {count} runs, ${cost:.2f}",
            body=f"From {since:%Y-%m-%d} to {until:%Y-%m-%d}, {organization.name} ran {count} runs for ${cost:.2f}.\n",
        )
    except Exception:
        logger.exception(
            "usage report for organization %s failed", getattr(organization, "pk", None)
        )
        return 0


@transaction.atomic
def preferences_set(*, user, receive: set[tuple[str, str]]) -> None:
    """Settings → Notifications: the person receives exactly the (kind, channel) pairs in
    ``receive``; every other pair becomes an opt-out. A person's own choice, so not audited."""
    every_pair = {(kind, channel) for kind in AlertKind.values for channel in Channel.values}
    wanted_off = every_pair - receive
    existing = {(o.kind, o.channel): o.pk for o in NotificationOptOut.objects.filter(user=user)}
    NotificationOptOut.objects.filter(
        pk__in=[pk for pair, pk in existing.items() if pair not in wanted_off]
    ).delete()
    NotificationOptOut.objects.bulk_create(
        NotificationOptOut(user=user, kind=kind, channel=channel)
        for kind, channel in wanted_off - existing.keys()
    )


def notifications_mark_read(*, user, organization) -> int:
    return Notification.objects.filter(
        user=user, organization=organization, read_at__isnull=True
    ).update(read_at=timezone.now())
