"""A run's end booked in one statement written once: the move out of ``running`` with the totals
its ledger holds, its steps, and its assistant turn (``services.run_finish`` decides what to
write; this sends it).

Like the claim (apps/runs/claiming.py), it replaced a handful of queries Django built anew for
every run a worker ended: the ledger's totals read, the run's row written, its steps counted and
inserted, the row read back, the earlier assistant turns summed, the turn inserted. PostgreSQL now
does the reading: the totals come from the ledger row, the steps are numbered after the run's
earlier ones (a resumed run has them), and the turn's cost is what the run spent minus what its
earlier turns claim — so the messages of a run still sum to the run (seed 003).

The move is the state machine's (``states.check_transition``): from ``running``, or from a sweep's
``failed`` (``reaped`` / ``worker_lost``) when the run was still alive after all — its own end
lands later and wins.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
from dataclasses import dataclass
from decimal import Decimal
from typing import cast

from django.db import DEFAULT_DB_ALIAS, connections, models
from django.db.models import Sum

from apps.spend.models import Ledger

from .choices import MessageRole, RunStatus, StepKind, StopReason
from .models import Message, Run, RunStep
from .rows import Columns
from .states import IllegalTransition, check_transition

# The failures a sweep writes that a live run's own end overrides.
RETAKEN_FAILURES = (StopReason.REAPED, StopReason.WORKER_LOST)


def assistant_turn_cost(run: Run, run_cost: Decimal) -> Decimal:
    """This turn's share: what the run spent minus what its earlier assistant turns claim. (A
    run's own end prices its turn by the same rule in SQL: ``finish`` below.)"""
    claimed = Message.objects.filter(run=run, role=MessageRole.ASSISTANT).aggregate(
        total=Sum("cost_usd")
    )["total"]
    return run_cost - (claimed or Decimal("0"))


@dataclass(frozen=True)
class Step:
    """One model request of the run, as its step row records it."""

    detail: dict
    input_tokens: int
    output_tokens: int
    cost_usd: Decimal


@functools.cache
def _statement() -> tuple[Columns, str]:
    run = Columns(Run, "f")
    runs, ledgers = Run._meta.db_table, Ledger._meta.db_table
    steps, messages = RunStep._meta.db_table, Message._meta.db_table
    sql = f"""WITH finished AS (
        UPDATE "{runs}" AS r SET
            status = %(to_status)s,
            stop_reason = %(stop_reason)s,
            error = %(error)s,
            budget_refusal = %(budget_refusal)s,
            output = %(output)s,
            ended_at = %(ended_at)s,
            last_transition_at = %(now)s,
            lease_expires_at = NULL,
            model_label = COALESCE(%(model_label)s, r.model_label),
            model_provider = COALESCE(%(model_provider)s, r.model_provider),
            model_name = COALESCE(%(model_name)s, r.model_name),
            (cost_usd, cost_is_partial, input_tokens, output_tokens, request_count) = (
                SELECT COALESCE(l.cost_usd, r.cost_usd),
                       COALESCE(l.cost_is_partial, r.cost_is_partial),
                       COALESCE(l.input_tokens, r.input_tokens),
                       COALESCE(l.output_tokens, r.output_tokens),
                       COALESCE(l.request_count, r.request_count)
                FROM (SELECT 1) AS one LEFT JOIN "{ledgers}" l ON l.run_id = r.id
            ),
            transcript = COALESCE(%(transcript)s, r.transcript)
        WHERE r.id = %(run)s
          AND (r.status = %(running)s
               OR (r.status = %(failed)s AND r.stop_reason = ANY(%(retaken)s)))
        RETURNING r.*
    ),
    new_steps AS (
        INSERT INTO "{steps}"
            (run_id, number, kind, detail, input_tokens, output_tokens, cost_usd, created_at)
        SELECT f.id, earlier.count + s.n, %(step_kind)s, s.detail::jsonb, s.input_tokens,
               s.output_tokens, s.cost_usd, %(now)s
        FROM finished f
        CROSS JOIN (SELECT count(*) AS count FROM "{steps}" WHERE run_id = %(run)s) AS earlier
        CROSS JOIN unnest(
            %(step_details)s::text[], %(step_input_tokens)s::bigint[],
            %(step_output_tokens)s::bigint[], %(step_costs)s::numeric[]
        ) WITH ORDINALITY AS s(detail, input_tokens, output_tokens, cost_usd, n)
    ),
    turn AS (
        INSERT INTO "{messages}"
            (conversation_id, run_id, role, content, cost_usd, cost_is_partial, run_status,
             context_tokens, created_at)
        SELECT f.conversation_id, f.id, %(assistant)s, %(content)s,
               f.cost_usd - COALESCE((
                   SELECT sum(m.cost_usd) FROM "{messages}" m
                   WHERE m.run_id = f.id AND m.role = %(assistant)s
               ), 0),
               f.cost_is_partial, f.status, %(context_tokens)s, %(now)s
        FROM finished f WHERE f.conversation_id IS NOT NULL
    )
    SELECT {run.sql} FROM finished f"""
    return run, sql


def finish(
    run_id: int,
    *,
    to_status: str,
    fields: dict,
    steps: list[Step],
    content: str,
    context_tokens: int | None,
    now: dt.datetime,
    using: str = DEFAULT_DB_ALIAS,
) -> Run | None:
    """Write the run's end; the row as written, or None when it was not there to end (a sweep
    ended it for good, or it was never running)."""
    check_transition(RunStatus.RUNNING, to_status)
    try:
        check_transition(RunStatus.FAILED, to_status)
        retaken = [str(reason) for reason in RETAKEN_FAILURES]
    except IllegalTransition:
        retaken = []
    connection = connections[using]

    def json_value(name: str):
        value = fields.get(name)
        if value is None:
            return None
        field = cast(models.JSONField, Run._meta.get_field(name))
        return field.get_db_prep_save(value, connection)

    detail_field = cast(models.JSONField, RunStep._meta.get_field("detail"))
    run, sql = _statement()
    with connection.cursor() as cursor:
        cursor.execute(
            sql,
            {
                "run": run_id,
                "to_status": to_status,
                "running": RunStatus.RUNNING.value,
                "failed": RunStatus.FAILED.value,
                "retaken": retaken,
                "stop_reason": fields["stop_reason"],
                "error": fields["error"],
                "budget_refusal": json_value("budget_refusal"),
                "output": fields["output"],
                "ended_at": fields["ended_at"],
                "now": now,
                "model_label": fields.get("model_label"),
                "model_provider": fields.get("model_provider"),
                "model_name": fields.get("model_name"),
                "transcript": json_value("transcript"),
                "step_kind": StepKind.MODEL_REQUEST.value,
                "step_details": [
                    json.dumps(step.detail, cls=detail_field.encoder) for step in steps
                ],
                "step_input_tokens": [step.input_tokens for step in steps],
                "step_output_tokens": [step.output_tokens for step in steps],
                "step_costs": [step.cost_usd for step in steps],
                "assistant": MessageRole.ASSISTANT.value,
                "content": content,
                "context_tokens": context_tokens,
            },
        )
        row = cursor.fetchone()
    return run.build(row, using) if row is not None else None
