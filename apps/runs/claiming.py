"""A worker's claim of a run: the move to ``running`` and every row preparing the run reads, in
one statement written once.

A worker assembling a burst of runs spent a quarter of its CPU in Django building the same small
queries for each of them (docs/runner.md, "The claim in one statement"). This statement is built
once per process from the models' own columns, every value a bound parameter, and its rows are
turned back into model instances (apps/runs/rows.py) — what the ORM does for a
``select_related`` query. It reads the run, its organization, agent,
version and publisher, conversation and ledger; the model profile its version names, with that
profile's vault secret; and the conversation's previous turn (the transcript the next request
continues; read on its own by ``selectors.previous_turn``, which this join must match).

The move itself is the state machine's (``states.check_transition``): claimed from the statuses
the caller names, and only while nobody has asked to cancel the run.
"""

from __future__ import annotations

import datetime as dt
import functools
from dataclasses import dataclass
from typing import cast

from django.db import DEFAULT_DB_ALIAS, connections, models

from apps.agents.models import Agent, AgentVersion, ModelProfile
from apps.orgs.models import Organization, User
from apps.spend.models import Ledger
from apps.vault.models import Secret

from .choices import RunStatus
from .models import Conversation, Run
from .rows import Columns, built_rows
from .selectors import PreviousTurn
from .states import check_transition


@dataclass(frozen=True)
class ClaimedRun:
    """A run its worker has just claimed, with what preparing it reads (``runner.assemble``)."""

    run: Run
    previous: PreviousTurn
    # The profile the version's spec names, in the run's organization; None when the spec names
    # none, or names one that is gone (then the publish rules look for it and say so).
    model_profile: ModelProfile | None


@functools.cache
def _statement() -> tuple[dict[str, Columns], str]:
    parts = {
        "run": Columns(Run, "r"),
        "organization": Columns(Organization, "o"),
        "agent": Columns(Agent, "a"),
        "version": Columns(AgentVersion, "v"),
        "published_by": Columns(User, "u"),
        "conversation": Columns(Conversation, "c"),
        "ledger": Columns(Ledger, "l"),
        "model_profile": Columns(ModelProfile, "m"),
        "secret": Columns(Secret, "s"),
    }
    table = {name: columns.model._meta.db_table for name, columns in parts.items()}
    sql = f"""WITH r AS (
        UPDATE "{table["run"]}" SET
            status = %(to_status)s,
            last_transition_at = %(now)s,
            lease_expires_at = %(lease_expires_at)s,
            started_at = CASE WHEN %(keep_started_at)s THEN started_at ELSE %(now)s END
        WHERE id = %(run)s AND status = ANY(%(from_statuses)s) AND cancel_requested_at IS NULL
        RETURNING *
    )
    SELECT {", ".join(columns.sql for columns in parts.values())}, p.transcript, p.created_at
    FROM r
    JOIN "{table["organization"]}" o ON o.id = r.organization_id
    JOIN "{table["agent"]}" a ON a.id = r.agent_id
    JOIN "{table["version"]}" v ON v.id = r.agent_version_id
    LEFT JOIN "{table["published_by"]}" u ON u.id = v.published_by_id
    LEFT JOIN "{table["conversation"]}" c ON c.id = r.conversation_id
    LEFT JOIN "{table["ledger"]}" l ON l.run_id = r.id
    LEFT JOIN "{table["model_profile"]}" m
        ON jsonb_typeof(v.spec -> 'model_profile_id') = 'number'
        AND m.id = (v.spec ->> 'model_profile_id')::bigint
        AND m.organization_id = r.organization_id
    LEFT JOIN "{table["secret"]}" s ON s.id = m.secret_id
    LEFT JOIN LATERAL (
        SELECT e.transcript, e.created_at FROM "{table["run"]}" e
        WHERE e.conversation_id = r.conversation_id AND e.created_at < r.created_at
          AND e.id <> r.id AND e.transcript <> '[]'::jsonb
        ORDER BY e.created_at DESC LIMIT 1
    ) p ON true"""
    return parts, sql


def claim_running(
    run_id: int,
    *,
    from_statuses: list[str],
    now: dt.datetime,
    lease_expires_at: dt.datetime,
    keep_started_at: bool,
    using: str = DEFAULT_DB_ALIAS,
) -> ClaimedRun | None:
    """Move the run to ``running`` from one of ``from_statuses`` (unless a cancel was asked) and
    read it; None when it was not there to claim."""
    for source in from_statuses:
        check_transition(source, RunStatus.RUNNING)
    parts, sql = _statement()
    with connections[using].cursor() as cursor:
        cursor.execute(
            sql,
            {
                "run": run_id,
                "to_status": RunStatus.RUNNING.value,
                "from_statuses": [str(status) for status in from_statuses],
                "now": now,
                "lease_expires_at": lease_expires_at,
                "keep_started_at": keep_started_at,
            },
        )
        row = cursor.fetchone()
    if row is None:
        return None
    built, rest = built_rows(parts, row, using)
    transcript, previous_created_at = rest
    if transcript is not None:
        field = cast(models.JSONField, Run._meta.get_field("transcript"))
        transcript = field.from_db_value(transcript, field.cached_col, connections[using])
    return ClaimedRun(
        run=_wired(built),
        previous=PreviousTurn(transcript, previous_created_at),
        model_profile=_profile(built),
    )


def _wired(built: dict) -> Run:
    """The run with its rows attached as ``select_related`` attaches them: reading
    ``run.agent_version.agent.organization`` or ``run.ledger`` is no query."""
    run, organization, agent = built["run"], built["organization"], built["agent"]
    run.organization = organization
    run.agent = agent
    agent.organization = organization
    run.agent_version = built["version"]
    run.agent_version.agent = agent
    run.agent_version.published_by = built["published_by"]
    run.conversation = built["conversation"]
    # The reverse one-to-one is cached even when absent: asking for it answers without a query.
    Run.ledger.related.set_cached_value(run, built["ledger"])
    return run


def _profile(built: dict) -> ModelProfile | None:
    profile = built["model_profile"]
    if profile is not None:
        profile.organization = built["organization"]
        profile.secret = built["secret"]
    return profile
