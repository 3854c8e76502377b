"""Sending alerts: e-mail through Django's backend plus an in-app notification.

Two rules that are not negotiated (seed 003): a person's opt-outs subtract last, and the
organization cap's alert goes to the admins whatever any spec says. Sending never blocks a run
and never raises into the caller: a run that already ended must not fail again because SMTP was
down — each public function logs the failure and returns.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Iterable
from decimal import Decimal

from django.conf import settings
from django.core.mail import send_mail
from django.db import connection, transaction
from django.db.models import Count, Q, Sum
from django.urls import reverse
from django.utils import timezone

from apps.orgs.permissions import APPROVALS_DECIDE, ROLE_PERMISSIONS, has_org_permission

from .audiences import configured_audience, resolve_audience
from .links import agent_link, approvals_queue_link, link
from .models import AlertKind, Channel, Notification, NotificationOptOut, UsageReportSent

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
    *,
    organization,
    kind: str,
    users: Iterable,
    subject: str,
    body: str,
    link: str = "",
    run_id: int | None = None,
) -> int:
    users = list(users)
    # No duplicate alerts in the inbox: one unread alert per run and person (a run that parks
    # again is the same request), and one unread budget alert per subject and person a month
    # (every run the cap refuses would otherwise add another).
    unread = Notification.objects.filter(kind=kind, user__in=users, read_at__isnull=True)
    if run_id is not None:
        unread = unread.filter(run_id=run_id)
    elif kind == AlertKind.BUDGET:
        month_start = timezone.now().replace(day=1, hour=0, minute=0, second=0, microsecond=0)
        unread = unread.filter(title=subject[:300], created_at__gte=month_start)
    else:
        unread = unread.none()
    already_unread = set(unread.values_list("user_id", flat=True))
    opted_out = set(
        NotificationOptOut.objects.filter(user__in=users, kind=kind).values_list(
            "user_id", "channel"
        )
    )
    sent = 0
    for user in users:
        if (user.pk, Channel.IN_APP) not in opted_out and user.pk not in already_unread:
            Notification.objects.create(
                organization=organization,
                user=user,
                kind=kind,
                title=subject[:300],
                body=body,
                link=link,
                run_id=run_id,
            )
        if (user.pk, Channel.EMAIL) not in opted_out:
            try:
                send_mail(subject, body, settings.DEFAULT_FROM_EMAIL, [user.email])
                sent += 1
            except Exception:  # SMTP down or refusing: logged, never raised into the run
                logger.exception("alert %s to user %s could not be sent", kind, user.pk)
    return sent


def _approval_audience(run_id: int, pending: dict):
    """The run, the pending calls ``pending`` selects (ToolApproval filters) as one sentence, and
    the run's approvals audience split into those with approvals:decide and the rest; None when
    none of those calls is pending any more."""
    from apps.approvals.models import ToolApproval
    from apps.runs.models import Run

    run = Run.objects.select_related("organization", "agent", "agent_version", "user").get(
        pk=run_id
    )
    tools = sorted(
        set(
            ToolApproval.objects.filter(**pending, status="pending").values_list(
                "tool_name", flat=True
            )
        )
    )
    if not tools:
        return None
    organization = run.organization
    roles, chosen = configured_audience(run.agent_version.frozen_spec, "approvals")
    audience = resolve_audience(
        organization, roles, agent=run.agent, run=run, chosen_user_ids=chosen
    )
    deciders = [u for u in audience if has_org_permission(u, organization, APPROVALS_DECIDE)]
    return run, ", ".join(tools), deciders, [u for u in audience if u not in deciders]


def notify_run_parked(*, run_id: int) -> int:
    """The approvals alert, as two e-mails split by approvals:decide: the request with the link to
    the queue, and for everyone else the fact — held, not failed; who can approve — with no link and
    no claim that anyone else was told."""
    try:
        found = _approval_audience(run_id, {"run_id": run_id})
        if found is None:
            return 0
        run, calls, deciders, others = found
        organization, agent = run.organization, run.agent
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
            run_id=run.pk,
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
            run_id=run.pk,
        )
        return sent
    except Exception:
        logger.exception("approvals alert for run %s failed", run_id)
        return 0


def notify_approval_expiring(*, run_id: int, approval_ids, expires_at: dt.datetime) -> int:
    """The expiry reminder: the calls of one run will be denied by time at ``expires_at`` unless
    someone decides. Split like the approvals alert: whoever has approvals:decide gets the
    reminder with the link to the queue; the rest of the audience the fact, without a link."""
    found = _approval_audience(run_id, {"pk__in": list(approval_ids)})
    if found is None:
        return 0
    run, calls, deciders, others = found
    organization, agent = run.organization, run.agent
    when = f"{expires_at.astimezone(dt.UTC):%Y-%m-%d %H:%M} UTC"
    queue = approvals_queue_link(organization)
    sent = _deliver(
        organization=organization,
        kind=AlertKind.APPROVALS,
        users=deciders,
        subject=f"{agent.name}: an approval expires at {when}",
        body=(
            f"Run #{run.pk} of {agent.name} in {organization.name} is still waiting for a decision "
            f"on {calls}. Unless someone decides by {when} "
            f"(APPROVAL_EXPIRY_HOURS), the call is denied for lack of time and the run is "
            f"cancelled.\n\nReview the request: {queue}\n"
        ),
        link=queue,
    )
    sent += _deliver(
        organization=organization,
        kind=AlertKind.APPROVALS,
        users=others,
        subject=f"{agent.name}: an approval expires at {when}",
        body=(
            f"Run #{run.pk} of {agent.name} in {organization.name} is still held for approval of "
            f"{calls}. Unless an {_roles_sentence()} of the organization decides by {when}, the "
            "call is denied for lack of time and the run is cancelled. Nothing is asked of you.\n"
        ),
    )
    return sent


# The cap itself is the last threshold: a "reached" alert is the BudgetWarningSent row at 1, so
# it goes out once per cap and month however many runs the cap refuses, and a warning that
# arrives after it (a task delivered late) finds the cap already reached and stays silent.
REACHED = Decimal("1")


def _month_counter(*, organization_id: int, agent_id: int | None):
    from apps.spend.services import budget_counter_for, month_of

    return budget_counter_for(organization_id=organization_id, agent_id=agent_id, month=month_of())


def _claim_reached(counter, *, spent_usd=None, limit_usd=None) -> bool:
    """Mark ``counter``'s cap reached for its month; False when it already was (nothing to send)."""
    from .models import BudgetWarningSent

    with transaction.atomic():
        _serialize_alerts_of(counter.pk)
        _, created = BudgetWarningSent.objects.get_or_create(
            counter=counter,
            threshold=REACHED,
            defaults={
                "spent_usd": Decimal(str(spent_usd if spent_usd is not None else 0)),
                "limit_usd": Decimal(str(limit_usd if limit_usd is not None else 0)),
            },
        )
    return created


# pg_advisory_xact_lock's first key: the alerts of one cap counter, taken in turn.
_ALERTS_LOCK_NAMESPACE = 0x4E4F5449  # "NOTI"


def _serialize_alerts_of(counter_id: int) -> None:
    """Within a transaction: one alert decision per cap counter at a time, so a warning's check
    "not reached yet" and the reached alert's claim cannot interleave. An advisory lock, not the
    counter row, which the budget guard locks on every request."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_advisory_xact_lock(%s, %s)", [_ALERTS_LOCK_NAMESPACE, counter_id % 2**31]
        )


def _cap_reached_already(counter_id: int) -> bool:
    from .models import BudgetWarningSent

    return BudgetWarningSent.objects.filter(counter_id=counter_id, threshold__gte=REACHED).exists()


def organization_cap_link(organization) -> str:
    """Where the organization's cap is read and edited: its settings page in the console."""
    return link(reverse("console:organization-settings"), organization)


def notify_agent_budget_reached(*, agent, spent_usd=None, limit_usd=None) -> int:
    """The agent's own cap bound: the spec's budget audience (default admins and the agent's
    owner), once per cap and month."""
    try:
        counter = _month_counter(organization_id=agent.organization_id, agent_id=agent.pk)
        if not _claim_reached(counter, spent_usd=spent_usd, limit_usd=limit_usd):
            return 0
        return _send_agent_budget_reached(agent=agent, limit_usd=limit_usd)
    except Exception:
        logger.exception("budget alert for agent %s failed", getattr(agent, "pk", None))
        return 0


def _send_agent_budget_reached(*, agent, limit_usd=None, crossed: str = "") -> int:
    spec = agent.current_version.frozen_spec if agent.current_version_id else None
    roles, chosen = configured_audience(spec, "budget")
    users = resolve_audience(agent.organization, roles, agent=agent, chosen_user_ids=chosen)
    return _deliver(
        organization=agent.organization,
        kind=AlertKind.BUDGET,
        users=users,
        subject=f"{agent.name} reached its monthly budget",
        body=(
            f"{agent.name} in {agent.organization.name} reached its own monthly cap"
            f"{f' of ${limit_usd}' if limit_usd is not None else ''}{crossed}; its runs stop before "
            f"the next model request until the cap is raised or the month turns.\n\n"
            f"The cap is edited on the agent: {agent_link(agent)}\n"
        ),
        link=agent_link(agent),
    )


def notify_org_cap_reached(*, organization, spent_usd=None, limit_usd=None) -> int:
    """The organization cap's alert goes to the admins, whatever any agent's spec says; once per
    month."""
    try:
        counter = _month_counter(organization_id=organization.pk, agent_id=None)
        if not _claim_reached(counter, spent_usd=spent_usd, limit_usd=limit_usd):
            return 0
        return _send_org_cap_reached(organization=organization, limit_usd=limit_usd)
    except Exception:
        logger.exception(
            "organization cap alert for organization %s failed", getattr(organization, "pk", None)
        )
        return 0


def _send_org_cap_reached(*, organization, limit_usd=None, crossed: str = "") -> int:
    users = resolve_audience(organization, ["admins"])
    target = organization_cap_link(organization)
    return _deliver(
        organization=organization,
        kind=AlertKind.BUDGET,
        users=users,
        subject=f"{organization.name} reached its monthly budget",
        body=(
            f"Every agent of {organization.name} stops before its next model request: the "
            f"organization's monthly cap{f' of ${limit_usd}' if limit_usd is not None else ''} is "
            f"reached{crossed}.\n\nThe cap is edited in the organization's settings: {target}\n"
        ),
        link=target,
    )


def notify_run_budget_refused(*, run_id: int) -> int:
    """The runs hook (``apps.runs.hooks.on_run_budget_refused``): a cap refused a run's request.
    The agent's own cap tells its spec's audience; the organization's cap tells the admins."""
    try:
        from apps.runs.models import Run

        run = Run.objects.select_related("organization", "agent").get(pk=run_id)
        refusal = run.budget_refusal or {}
        if refusal.get("scope") == "organization":
            return notify_org_cap_reached(
                organization=run.organization,
                spent_usd=refusal.get("spent_usd"),
                limit_usd=refusal.get("limit_usd"),
            )
        return notify_agent_budget_reached(
            agent=run.agent, spent_usd=refusal.get("spent_usd"), limit_usd=refusal.get("limit_usd")
        )
    except Exception:
        logger.exception("budget alert for run %s failed", run_id)
        return 0


def _days_left(month: dt.date, today: dt.date) -> int:
    """Whole UTC days left in ``month`` from ``today``, today included (0 once it is over)."""
    following = (month.replace(day=28) + dt.timedelta(days=4)).replace(day=1)
    if today >= following:
        return 0
    return (following - max(today, month)).days


def notify_budget_warning(
    *, counter_id: int, fractions, spent_usd, limit_usd, today: dt.date | None = None
) -> int:
    """A cap is approaching: its audience hears the figure, the cap and the days left in the
    month — once per threshold and month (a ``BudgetWarningSent`` row per counter and threshold;
    a new month is a new counter). A booking that crossed several thresholds at once sends the
    highest and marks the lower ones, so 80% never arrives after 95%.

    The agent's cap warns its spec's budget audience; the organization's cap warns the admins
    whatever any spec says (an agent cannot silence a limit it does not control). Opt-outs
    subtract last (``_deliver``)."""
    try:
        from apps.spend.models import BudgetCounter, BudgetScope

        from .models import BudgetWarningSent

        counter = BudgetCounter.objects.select_related(
            "organization", "agent__organization", "agent__current_version"
        ).get(pk=counter_id)
        spent, limit = Decimal(str(spent_usd)), Decimal(str(limit_usd))
        fractions = sorted(Decimal(str(f)) for f in fractions)
        if not fractions or limit <= 0:
            return 0
        if spent >= limit:
            # One request carried the cap past its warnings to its end: the next request is
            # refused, so the alert that goes out is "reached" (naming what it went past), never
            # a warning that reads 95% while the cap already refuses.
            fractions = [*(f for f in fractions if f < REACHED), REACHED]
        created = {}
        with transaction.atomic():
            _serialize_alerts_of(counter.pk)
            if _cap_reached_already(counter.pk):
                # The refusal's alert went first (a late task): it said the cap is reached, and a
                # warning now would arrive after it.
                return 0
            for fraction in fractions:
                _, created[fraction] = BudgetWarningSent.objects.get_or_create(
                    counter=counter,
                    threshold=fraction,
                    defaults={"spent_usd": spent, "limit_usd": limit},
                )
        highest = fractions[-1]
        if not created[highest]:
            return 0  # already sent this month (a second delivery, or a racing booking)
        if highest >= REACHED:
            crossed = [f for f in fractions if f < REACHED]
            went_past = (
                " (one request carried it past "
                + " and ".join(f"{f * 100:.0f}%" for f in crossed)
                + ")"
                if crossed
                else ""
            )
            if counter.scope == BudgetScope.ORGANIZATION:
                return _send_org_cap_reached(
                    organization=counter.organization, limit_usd=f"{limit:.2f}", crossed=went_past
                )
            return _send_agent_budget_reached(
                agent=counter.agent, limit_usd=f"{limit:.2f}", crossed=went_past
            )
        organization = counter.organization
        month_name = counter.month.strftime("%B %Y")
        days = _days_left(counter.month, today or timezone.now().astimezone(dt.UTC).date())
        share = f"{(spent / limit * 100):.0f}%"
        days_sentence = (
            f"{days} day{'s' if days != 1 else ''} left in {month_name} (UTC), today included"
        )
        figures = f"${spent:.2f} of ${limit:.2f} ({share})"
        if counter.scope == BudgetScope.ORGANIZATION:
            users = resolve_audience(organization, ["admins"])
            subject = f"{organization.name} has used {highest * 100:.0f}% of its monthly budget"
            body = (
                f"{organization.name} has spent {figures} of its organization-wide monthly cap, "
                f"with {days_sentence}. When the cap is reached every agent of the organization "
                f"stops before its next model request.\n\n"
                f"The cap is edited in the organization's settings: "
                f"{organization_cap_link(organization)}\n"
            )
            target = organization_cap_link(organization)
        else:
            agent = counter.agent
            # Every counter outside the organization scope is one agent's (the ledger writes it so).
            assert agent is not None, "an agent-scope budget counter names its agent"
            spec = agent.current_version.frozen_spec if agent.current_version is not None else None
            roles, chosen = configured_audience(spec, "budget")
            users = resolve_audience(organization, roles, agent=agent, chosen_user_ids=chosen)
            subject = f"{agent.name} has used {highest * 100:.0f}% of its monthly budget"
            body = (
                f"{agent.name} in {organization.name} has spent {figures} of its own monthly "
                f"cap, with {days_sentence}. When the cap is reached its runs stop before their "
                f"next model request.\n\nThe cap is edited on the agent: {agent_link(agent)}\n"
            )
            target = agent_link(agent)
        return _deliver(
            organization=organization,
            kind=AlertKind.BUDGET,
            users=users,
            subject=subject,
            body=body,
            link=target,
        )
    except Exception:
        logger.exception("budget warning for counter %s failed", counter_id)
        return 0


def send_agent_usage_report(*, agent, period: str, since: dt.datetime, until: dt.datetime) -> int:
    """One agent's usage report over [since, until), once per period (a second call for the same
    period sends nothing). An agent that ran nothing gets no report (seed 003: a "0 runs, $0.00"
    e-mail teaches people to filter the one that matters)."""
    try:
        from apps.runs.models import Run

        spec = agent.current_version.frozen_spec if agent.current_version_id else None
        if spec is None:
            return 0
        runs = Run.objects.filter(
            agent=agent, parent_run__isnull=True, created_at__gte=since, created_at__lt=until
        )
        totals = runs.aggregate(
            count=Count("pk"),
            cost=Sum("cost_usd"),
            partial=Count("pk", filter=Q(cost_is_partial=True)),
        )
        if not totals["count"]:
            return 0
        _, created = UsageReportSent.objects.get_or_create(
            agent=agent, period=period, period_start=since.date()
        )
        if not created:
            return 0
        cost = totals["cost"] or Decimal("0")
        # A floor says so: an unpriced model's runs make the total "at least" this much.
        amount = f"at least ${cost:.2f}" if totals["partial"] else f"${cost:.2f}"
        roles, chosen = configured_audience(spec, "usage")
        users = resolve_audience(agent.organization, roles, agent=agent, chosen_user_ids=chosen)
        last_day = until - dt.timedelta(days=1)
        return _deliver(
            organization=agent.organization,
            kind=AlertKind.USAGE,
            users=users,
            subject=f"{agent.name}: {totals['count']} runs, {amount} ({period})",
            body=(
                f"From {since:%Y-%m-%d} to {last_day:%Y-%m-%d}, {agent.name} in {agent.organization.name} "
                f"ran {totals['count']} runs for {amount}.\n\nThe agent: {agent_link(agent)}\n"
            ),
            link=agent_link(agent),
        )
    except Exception:
        logger.exception("usage report for agent %s failed", getattr(agent, "pk", None))
        return 0


def usage_periods_ending(today: dt.date) -> list[tuple[str, dt.datetime, dt.datetime]]:
    """The report periods that closed at the start of ``today`` (UTC): the week on a Monday,
    the calendar month on the 1st."""
    start_of_today = dt.datetime.combine(today, dt.time.min, tzinfo=dt.UTC)
    periods = []
    if today.weekday() == 0:
        periods.append(("weekly", start_of_today - dt.timedelta(days=7), start_of_today))
    if today.day == 1:
        previous = (today - dt.timedelta(days=1)).replace(day=1)
        periods.append(
            ("monthly", dt.datetime.combine(previous, dt.time.min, tzinfo=dt.UTC), start_of_today)
        )
    return periods


def send_due_usage_reports(today: dt.date) -> int:
    """The daily job: every agent whose published spec asks for the period that just closed."""
    from apps.agents.models import Agent, AgentStatus

    sent = 0
    periods = usage_periods_ending(today)
    if not periods:
        return 0
    agents = Agent.objects.filter(
        status=AgentStatus.ACTIVE, current_version__isnull=False
    ).select_related("organization", "current_version")
    for agent in agents:
        assert agent.current_version is not None  # the query takes published agents only
        usage = agent.current_version.frozen_spec.alerts.usage
        for period, since, until in periods:
            if getattr(usage, period):
                sent += send_agent_usage_report(
                    agent=agent, period=period, since=since, until=until
                )
    return sent


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
