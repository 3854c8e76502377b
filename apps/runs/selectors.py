"""Every read of runs a person can reach, scoped to their organization and grants."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from django.db.models import (
    Case,
    DurationField,
    Exists,
    ExpressionWrapper,
    F,
    IntegerField,
    OuterRef,
    Q,
    QuerySet,
    Value,
    When,
)
from django.db.models.functions import Coalesce, Now

from apps.agents.selectors import agents_runnable_by
from apps.capabilities.tool_view import override_of
from apps.capabilities.tools.sources import WEB_TOOL_IDS, web_activity
from apps.orgs.models import ApiKey, Membership, User
from apps.orgs.permissions import ROLE_PERMISSIONS, RUNS_VIEW, has_org_permission

from . import hooks
from .choices import TERMINAL_STATUSES
from .events import RunFinishedFrame
from .filters import RunHistoryFilters
from .gauge import context_gauge, context_window_of, selected_profile_of
from .media import restored_transcript
from .models import Conversation, Message, Run


def runs_visible_to(user, organization) -> QuerySet[Run]:
    """runs:view reads every run of the organization; anyone else only the runs they started."""
    runs = Run.objects.filter(organization=organization).select_related("agent")
    if has_org_permission(user, organization, RUNS_VIEW):
        return runs
    return runs.filter(user_id=user.pk)


def conversation_for_writer(user, organization, conversation_id) -> Conversation | None:
    """The conversation a person may post a turn into (or open as a chat): their own, only.

    A chat is private to the person who holds it: runs:view reads a colleague's runs in the
    history, but never lets its holder speak in the colleague's thread. A conversation that is
    someone else's, another organization's or missing is the same None (a 404 at the edge), so a
    probe cannot tell which of the three it hit.
    """
    if organization is None or conversation_id is None:
        return None
    return own_conversations(user, organization).filter(pk=conversation_id).first()


def conversations_visible_to(user, organization) -> QuerySet[Conversation]:
    """Conversations listed to a reader (the deletion endpoint's lookup: settings:manage may
    delete any, decided by the service); never the lookup for writing into one."""
    conversations = Conversation.objects.filter(organization=organization)
    if has_org_permission(user, organization, RUNS_VIEW):
        return conversations
    return conversations.filter(user_id=user.pk)


# --- the run history (seed 003, "Qué muestra el historial de runs" / "Acotar el historial") ---


def _with_history_columns(runs: QuerySet[Run]) -> QuerySet[Run]:
    return runs.annotate(
        # A queued run has no started_at yet; it is listed (and windowed) by when it was asked for.
        started=Coalesce("started_at", "created_at"),
        duration=ExpressionWrapper(F("ended_at") - F("started_at"), output_field=DurationField()),
        tokens=F("input_tokens") + F("output_tokens"),
        # Cost and tokens are written only when a run ends: unfinished runs sort last either way.
        unfinished=Case(
            When(ended_at__isnull=True, then=Value(1)),
            default=Value(0),
            output_field=IntegerField(),
        ),
    )


def run_history(user, organization, filters: RunHistoryFilters) -> QuerySet[Run]:
    """The runs a person may read, filtered and ordered over the whole filtered set in SQL.

    Only top-level runs by default (the rows someone started: their cost is what the organization
    is billed). ``agent_id`` + ``include_delegations`` is an agent's own history, delegated rows
    included; ``parent_run_id`` lists what one run delegated and takes precedence. Every filter
    narrows the same queryset the count is taken from, so a total describes the rows under it.
    """
    runs = _with_history_columns(runs_visible_to(user, organization)).select_related(
        "agent", "user"
    )
    if filters.parent_run_id is not None:
        runs = runs.filter(parent_run_id=filters.parent_run_id)
    elif not filters.include_delegations:
        runs = runs.filter(parent_run__isnull=True)
    if filters.agent_id is not None:
        runs = runs.filter(agent_id=filters.agent_id)
    if filters.statuses:
        runs = runs.filter(status__in=filters.statuses)
    if filters.surfaces:
        runs = runs.filter(surface__in=filters.surfaces)
    if filters.user_ids:
        runs = runs.filter(user_id__in=filters.user_ids)
    if filters.model_labels:
        # Exact: the label the run recorded, not resolved through the model catalog.
        runs = runs.filter(model_label__in=filters.model_labels)
    if filters.started_from is not None:
        # started and duration are _with_history_columns' annotations (mypy sees model fields).
        runs = runs.filter(started__gte=filters.started_from)  # type: ignore[misc]
    if filters.started_before is not None:
        runs = runs.filter(started__lt=filters.started_before)  # type: ignore[misc]
    if filters.agent_version_id is not None:
        runs = runs.filter(agent_version_id=filters.agent_version_id)
    if filters.took_over_ms is not None:
        # An unfinished run has no duration: excluded, never counted as zero.
        runs = runs.filter(duration__gt=dt.timedelta(milliseconds=filters.took_over_ms))  # type: ignore[misc]
    if filters.rated is not None:
        # Runs in which someone rated a message the run produced (message_ratings).
        runs = runs.filter(Exists(_ratings_of_run().filter(thumb=filters.rated)))
    if filters.exposure_id is not None:
        # The chat binding that admitted the run (apps.channels).
        runs = runs.filter(exposure_id=filters.exposure_id)
    if filters.environment_id is not None:
        # No run records an environment (that feature is not built): the honest answer to this
        # filter is no rows.
        runs = runs.none()
    return runs.annotate(down_rated=Exists(_ratings_of_run().filter(thumb="down"))).order_by(
        *_history_order(filters)
    )


def _ratings_of_run() -> QuerySet:
    """The ratings of the outer run's messages. apps.ratings sits above runs and provides its
    table through ``hooks.message_ratings``, so the import graph keeps pointing one way."""
    return hooks.message_ratings().filter(run_id=OuterRef("pk"))


def run_is_down_rated(run: Run) -> bool:
    """A run read on its own (not through the history's annotation): did anyone thumb it down?"""
    return hooks.message_ratings().filter(run_id=run.pk, thumb="down").exists()


def _history_order(filters: RunHistoryFilters) -> list:
    column = {
        "started_at": "started",
        "duration": "duration",
        "cost": "cost_usd",
        "tokens": "tokens",
    }[filters.order_by]
    value = (
        F(column).desc(nulls_last=True) if filters.descending else F(column).asc(nulls_last=True)
    )
    tiebreak = "-pk" if filters.descending else "pk"
    if filters.order_by == "started_at":
        return [value, tiebreak]
    return ["unfinished", value, tiebreak]


def run_for_reader(user, organization, run_id) -> Run | None:
    """One run, delegated or not, resolved against the caller's organization first and then
    their grant (seed 003: reading a run is authorized, not owned); None reads as absent."""
    return (
        runs_visible_to(user, organization)
        .select_related("agent", "agent__current_version", "user", "parent_run")
        .filter(pk=run_id)
        .first()
    )


def run_for_decider(organization, run_id) -> Run | None:
    """A run of the caller's organization, for someone who decides its calls (approvals:decide,
    checked by the view): deciding is over the organization's queue, not over runs one started."""
    if organization is None:
        return None
    return (
        Run.objects.filter(organization=organization, pk=run_id)
        .select_related("organization", "user")
        .first()
    )


def run_turns(run: Run):
    """The turns of a run's conversation that belong to this run, in order."""
    return Message.objects.filter(run=run).order_by("created_at", "pk")


def conversation_turns(conversation: Conversation):
    return conversation.messages.select_related("run").order_by("created_at", "pk")


def turns_with_gauge(messages, agent) -> list[dict]:
    """Turns as dicts, each assistant turn with its context gauge against the agent's current
    model selection (seed 003: the count is stored on the turn, the ratio never is)."""
    window = context_window_of(selected_profile_of(agent))
    turns = []
    for message in messages:
        turns.append(
            {
                "id": message.pk,
                "role": message.role,
                "content": message.content,
                "run_id": message.run_id,
                "run_status": message.run_status,
                "cost_usd": message.cost_usd,
                "cost_is_partial": message.cost_is_partial,
                "context_tokens": message.context_tokens,
                "context": context_gauge(message.context_tokens, window),
                "created_at": message.created_at,
            }
        )
    return turns


def run_transcript(run: Run) -> dict:
    """What a run's detail view draws: its turns in order and its steps. A run without a
    conversation says so with ``conversation_id: None`` and no turns, never an empty list that
    would read as "it did nothing"."""
    steps = list(run.steps.order_by("number"))
    web = web_activity(_own_transcript(run), _renamed_web_tools(run))
    if run.conversation_id is None:
        return {
            "run_id": run.pk,
            "conversation_id": None,
            "turns": None,
            "steps": steps,
            "web": web,
        }
    return {
        "run_id": run.pk,
        "conversation_id": run.conversation_id,
        "turns": turns_with_gauge(run_turns(run), run.agent),
        "steps": steps,
        "web": web,
    }


def _renamed_web_tools(run: Run) -> dict[str, str]:
    """The names the run's model saw for the web tools a binding renamed: name -> tool id."""
    spec = run.agent_version.spec if run.agent_version_id else {}
    names = {}
    for binding in (spec or {}).get("capabilities") or []:
        overrides = binding.get("tool_overrides") or {}
        for tool_id in WEB_TOOL_IDS:
            # The name the model saw, as the manifest and the run's toolsets name it.
            name, _ = override_of(overrides, tool_id)
            if name:
                names[name] = tool_id
    return names


def _own_transcript(run: Run) -> list:
    """The messages this run added: a run's transcript starts with the history it was given (the
    previous run's transcript in its conversation), which belongs to the earlier runs."""
    transcript = run.transcript or []
    if run.conversation_id is None:
        return restored_transcript(
            transcript, organization_id=run.organization_id, conversation_id=None
        )
    given = (
        Run.objects.filter(conversation_id=run.conversation_id, created_at__lt=run.created_at)
        .exclude(pk=run.pk)
        .exclude(transcript=[])
        .order_by("-created_at")
        .values_list("transcript", flat=True)
        .first()
    )
    return restored_transcript(
        transcript[len(given or []) :],
        organization_id=run.organization_id,
        conversation_id=run.conversation_id,
    )


# --- who may follow a run's frames (asked on connect and again before every send) ----------


def _caller_still_in(user_id: int, organization_id: int, api_key_id: int | None):
    """A fresh condition (no cached role): the person is active and still a member (or an app
    admin), and the API key they connected with, if any, is not revoked."""
    active_member = Q(
        Exists(User.objects.filter(pk=user_id, is_active=True, is_superuser=True))
    ) | Q(
        Exists(
            Membership.objects.filter(
                organization_id=organization_id, user_id=user_id, user__is_active=True
            )
        )
    )
    if api_key_id is not None:
        # A key that was revoked or has expired since the stream began ends it.
        active_member &= Q(
            Exists(
                ApiKey.objects.filter(pk=api_key_id, revoked_at__isnull=True).filter(
                    Q(expires_at__isnull=True) | Q(expires_at__gt=Now())
                )
            )
        )
    return active_member


def run_followable(
    *, user_id: int, organization_id: int, run_id: int, api_key_id: int | None = None
) -> bool:
    """May this caller receive this run's frames right now? One query: the run is in the caller's
    organization, the caller is still in it, and holds runs:view or started the run. Its twin for
    the re-check between sends is RUN_FOLLOWABLE_SQL below."""
    reads_every_run = Exists(User.objects.filter(pk=user_id, is_superuser=True)) | Exists(
        Membership.objects.filter(
            organization_id=organization_id, user_id=user_id, role__in=VIEWING_ROLES
        )
    )
    return (
        Run.objects.filter(pk=run_id, organization_id=organization_id)
        .filter(_caller_still_in(user_id, organization_id, api_key_id))
        .filter(Q(user_id=user_id) | reads_every_run)
        .exists()
    )


def conversation_followable(
    *, user_id: int, organization_id: int, conversation_id: int, api_key_id: int | None = None
) -> bool:
    """A conversation's live frames are its owner's: runs:view reads a colleague's run, but never
    widens the private thread it sits in (seed 003)."""
    return (
        Conversation.objects.filter(
            pk=conversation_id, organization_id=organization_id, user_id=user_id
        )
        .filter(_caller_still_in(user_id, organization_id, api_key_id))
        .exists()
    )


# The prepared-SQL twin of run_followable / conversation_followable above (which decide on a
# websocket connect), side by side so the one answer to "who may follow run N" is read in one
# place; the same conditions written once as SQL so the re-check asked while frames flow costs
# one prepared statement (~0.2 ms) instead of building and compiling the ORM query (~8 ms of Python on the
# server's event-loop process, which delayed every frame behind it). Only table names (from the
# models) are formatted in; every value is a bound parameter. tests/runs/test_consumer.py asserts
# both forms agree for every persona.
_STILL_IN = """
    (EXISTS (SELECT 1 FROM {user} u WHERE u.id = %(user)s AND u.is_active AND u.is_superuser)
     OR EXISTS (SELECT 1 FROM {membership} m JOIN {user} u ON u.id = m.user_id
                WHERE m.organization_id = %(organization)s AND m.user_id = %(user)s AND u.is_active))
    AND (%(api_key)s::bigint IS NULL
         OR EXISTS (SELECT 1 FROM {api_key} k WHERE k.id = %(api_key)s AND k.revoked_at IS NULL
                    AND (k.expires_at IS NULL OR k.expires_at > now())))
"""
_RUN_FOLLOWABLE_SQL = (
    """
SELECT EXISTS (
    SELECT 1 FROM {run} r
    WHERE r.id = %(subject)s AND r.organization_id = %(organization)s
    AND """
    + _STILL_IN
    + """
    AND (r.user_id = %(user)s
         OR EXISTS (SELECT 1 FROM {user} u WHERE u.id = %(user)s AND u.is_superuser)
         OR EXISTS (SELECT 1 FROM {membership} m WHERE m.organization_id = %(organization)s
                    AND m.user_id = %(user)s AND m.role = ANY(%(viewing_roles)s)))
)
"""
)
_CONVERSATION_FOLLOWABLE_SQL = (
    """
SELECT EXISTS (
    SELECT 1 FROM {conversation} c
    WHERE c.id = %(subject)s AND c.organization_id = %(organization)s AND c.user_id = %(user)s
    AND """
    + _STILL_IN
    + """
)
"""
)
_TABLES = {
    "run": Run._meta.db_table,
    "conversation": Conversation._meta.db_table,
    "user": User._meta.db_table,
    "membership": Membership._meta.db_table,
    "api_key": ApiKey._meta.db_table,
}
RUN_FOLLOWABLE_SQL = _RUN_FOLLOWABLE_SQL.format(**{k: f'"{v}"' for k, v in _TABLES.items()})
CONVERSATION_FOLLOWABLE_SQL = _CONVERSATION_FOLLOWABLE_SQL.format(
    **{k: f'"{v}"' for k, v in _TABLES.items()}
)
# The roles that read every run of the organization (runs:view), from the permission table.
VIEWING_ROLES = [str(role) for role, granted in ROLE_PERMISSIONS.items() if RUNS_VIEW in granted]


def conversation_run_ids(conversation_id: int, *, from_run_id: int | None) -> list[int]:
    """The runs of a conversation to replay for a follower: from ``from_run_id`` on, else the latest."""
    runs = (
        Run.objects.filter(conversation_id=conversation_id)
        .order_by("pk")
        .values_list("pk", flat=True)
    )
    if from_run_id is not None:
        return list(runs.filter(pk__gte=from_run_id))
    latest = runs.last()
    return [latest] if latest is not None else []


def run_terminal_frame(run_id: int) -> RunFinishedFrame | None:
    """The terminal frame rebuilt from the row, for a finished run whose stream has expired."""
    run = (
        Run.objects.filter(pk=run_id)
        .values("status", "cost_usd", "cost_is_partial", "error")
        .first()
    )
    if run is None or run["status"] not in TERMINAL_STATUSES:
        return None
    return RunFinishedFrame(
        type="run_finished",
        run_id=run_id,
        status=run["status"],
        cost_usd=str(run["cost_usd"]),
        cost_is_partial=run["cost_is_partial"],
        error=run["error"],
    )


def own_conversations(user, organization):
    """A person's own threads (chat is private: runs:view does not widen it)."""
    return Conversation.objects.filter(organization=organization, user_id=user.pk).select_related(
        "agent"
    )


def runnable_agents(user, organization):
    """Agents a chat can start: those ``user`` may run (apps.agents.selectors), by name."""
    return agents_runnable_by(user, organization).order_by("name")


def live_run_of(conversation: Conversation) -> Run | None:
    """The conversation's run still in progress, if any (the chat page attaches to its frames)."""
    return conversation.runs.exclude(status__in=TERMINAL_STATUSES).order_by("-pk").first()


def delegations_of(run: Run) -> QuerySet[Run]:
    return Run.objects.filter(parent_run=run).select_related("agent").order_by("started_at", "pk")


# --- the previous turn a run continues ------------------------------------------------------------


@dataclass(frozen=True)
class PreviousTurn:
    """The conversation's latest earlier run that has a transcript: what the next turn's model
    reads back. ``transcript`` None: the run opens its conversation (or has none)."""

    transcript: list | None = None
    created_at: dt.datetime | None = None


def previous_turn(run: Run) -> PreviousTurn:
    """Read on its own; the worker's claim reads the same row in its statement (the LATERAL
    join of apps/runs/claiming.py), so the two change together."""
    if run.conversation_id is None:
        return PreviousTurn()
    previous = (
        Run.objects.filter(conversation_id=run.conversation_id, created_at__lt=run.created_at)
        .exclude(pk=run.pk)
        .exclude(transcript=[])
        .order_by("-created_at")
        .values_list("transcript", "created_at")
        .first()
    )
    return PreviousTurn(*previous) if previous else PreviousTurn()
