"""The delegated rows: one per finished delegation of a published agent, costed from its own
entries of the run's one ledger; the rows opened when an answered run is still accruing; the late
booking that makes it final. Every status a row moves to goes through ``apps.runs.states``."""

from __future__ import annotations

import datetime as dt
import logging
from decimal import Decimal
from typing import Any, cast

from django.conf import settings
from django.db import transaction
from django.db.models import Exists, OuterRef, Q
from django.utils import timezone
from pydantic_ai.messages import ModelRequest, UserPromptPart

from apps.agents.models import AgentVersion

from .. import states
from ..choices import TERMINAL_STATUSES, MessageRole, RunStatus
from ..events import SubagentRecordedFrame
from ..finishing import assistant_turn_cost
from ..models import Message, Run
from ..totals import delegated_totals, ledger_totals
from .parked import iter_nodes, pending_records
from .types import DelegationRecord, DelegationRuntime

logger = logging.getLogger(__name__)


def _delegated_rows(run) -> dict:
    rows: dict = {"": run}
    existing = Run.objects.filter(parent_run__isnull=False, agent_id__isnull=False).filter(
        Q(parent_run=run)
        | Q(parent_run__parent_run=run)
        | Q(parent_run__parent_run__parent_run=run)
    )
    for row in existing:
        rows[row.subagent_task_id] = row
    return rows


def book_delegations(*, run, runtime: DelegationRuntime | None, parking: bool) -> tuple[list, list]:
    """One row per finished delegation of a published agent, under the nearest published
    ancestor's row, costed from its own entries of the run's one ledger (every segment's: the
    ledger outlives a park). A delegation that outlived the run's answer already has its row
    (``running``, written by ``outlive``): that row gets its end. Returns (frames, records still
    waiting for a parked parent); what it books leaves ``runtime.records``."""

    if runtime is None or not runtime.records:
        return [], []
    rows = _delegated_rows(run)
    frames: list = []
    pending = list(runtime.records)
    progress = True
    while pending and progress:
        progress = False
        for record in list(pending):
            parent = rows.get(record.parent_task_id)
            if parent is None:
                continue
            pending.remove(record)
            # Removed one by one: background delegations append to this list from the loop
            # while the booking runs on a thread.
            runtime.records.remove(record)
            progress = True
            totals = delegated_totals(run, record.task_id)
            fields: dict[str, Any] = {
                "status": record.status,
                "stop_reason": record.stop_reason,
                "output": record.output,
                "error": record.error,
                "input_tokens": totals["input"] or 0,
                "output_tokens": totals["output"] or 0,
                "request_count": totals["requests"] or 0,
                "cost_usd": totals["cost"] or Decimal("0"),
                "cost_is_partial": bool(totals["unpriced"]),
                "started_at": record.started_at,
                "ended_at": record.ended_at,
            }
            child = rows.get(record.task_id)
            if child is not None:
                # Its row was written when it outlived the answer: the row gets its end (unless
                # a sweep ended it meanwhile: the worker was thought lost, and it was not).
                ending = {k: v for k, v in fields.items() if k != "status"}
                states.claim(
                    child.pk,
                    from_statuses=[RunStatus.RUNNING, RunStatus.FAILED],
                    to_status=record.status,
                    last_transition_at=record.ended_at,
                    lease_expires_at=None,
                    accruing=False,
                    **ending,
                )
            else:
                child = Run.objects.create(
                    organization_id=run.organization_id,
                    agent_id=record.agent_id,
                    agent_version_id=record.agent_version_id,
                    user_id=run.user_id,
                    surface=run.surface,
                    parent_run=parent,
                    subagent_task_id=record.task_id,
                    input=record.input,
                    model_label=record.model_label,
                    model_provider=record.provider,
                    model_name=record.model_name,
                    **fields,
                )
            rows[record.task_id] = child
            frames.append(
                SubagentRecordedFrame(
                    type="subagent_recorded", task_id=record.task_id, run_id=child.pk
                )
            )
    # A delegation whose published parent is still parked waits for that parent's row.
    waiting = list(pending)
    if pending and not parking:
        # The parent never finished (the run ended while it was parked, or it failed): its
        # delegations are booked under the run's own row rather than lost.
        for record in pending:
            record.parent_task_id = ""
        more, _ = book_delegations(run=run, runtime=runtime, parking=True)
        frames.extend(more)
        waiting = []
    else:
        for record in pending:
            runtime.records.remove(record)
    return frames, waiting


def book_abandoned(run, *, sentence: str) -> int:
    """A parked run that ends without continuing (its wait expired, it was cancelled while
    parked): every published delegation of its parked tree still gets an honest row — status
    ``cancelled`` with the sentence that ended the run, its span from its first segment's start
    to when it parked, its cost summed over every segment. Finished delegations that were waiting
    for a parked parent are booked too. Returns how many rows it wrote."""
    state = run.paused_state or {}
    runtime = DelegationRuntime(
        organization_id=run.organization_id,
        run_id=run.pk,
        user_id=run.user_id,
        surface=run.surface,
        approval_mode=run.approval_mode,
    )
    runtime.records = pending_records(state)
    for node in iter_nodes(state.get("delegates", [])):
        if not node.get("published") or not node.get("agent_id"):
            continue
        started = dt.datetime.fromisoformat(node["started_at"])
        parked = node.get("parked_at")
        model = node.get("model") or {}
        version_id = node.get("agent_version_id")
        if version_id is None:
            # A node parked before its version was kept: the delegate's current version.
            version_id = (
                AgentVersion.objects.filter(agent_id=node["agent_id"])
                .order_by("-number")
                .values_list("pk", flat=True)
                .first()
            )
            if version_id is None:
                continue
        runtime.records.append(
            DelegationRecord(
                task_id=node["task_id"],
                parent_task_id=node.get("parent_task_id", ""),
                agent_id=node["agent_id"],
                agent_version_id=version_id,
                name=node.get("name", ""),
                input=node.get("description", ""),
                status="cancelled",
                stop_reason="cancelled",
                error=sentence[:500],
                output="",
                started_at=started,
                ended_at=dt.datetime.fromisoformat(parked) if parked else started,
                provider=model.get("provider", ""),
                model_name=model.get("model_name", ""),
                model_label=model.get("model_label", ""),
            )
        )
    frames, _ = book_delegations(run=run, runtime=runtime, parking=False)
    return len(frames)


def open_accruing(run, runtime: DelegationRuntime) -> dict[int, str]:
    """The run answered while background delegations it started may still run: in the same
    transaction as its answer, the run is marked ``accruing`` and holds a lease its worker renews,
    and each published delegation still running gets its row (``running``, with a lease), under
    its nearest published ancestor's row. So whatever happens next — the delegations settle, or
    the worker dies — nothing booked under the run is without a row that says it is not final
    (the lease sweep settles it: ``services.runs_sweep_lapsed_leases``). Returns {row id: task
    id}, kept on the runtime for the watcher."""

    rows = _delegated_rows(run)
    now = timezone.now()
    lease = now + dt.timedelta(seconds=settings.RUN_LEASE_SECONDS)
    # A cancel asked of the finished run cancels them — an inline specialist's too, which has no
    # row: the watcher follows the run while its lease is live.
    Run.objects.filter(pk=run.pk).update(accruing=True, lease_expires_at=lease)
    opened: dict[int, str] = {}
    waiting = {
        task_id: live
        for task_id, live in list(runtime.live.items())
        if live.delegate.published and live.delegate.agent_version_id is not None
    }
    progress = True
    while waiting and progress:
        progress = False
        for task_id, live in list(waiting.items()):
            parent = rows.get(live.billed_to)
            if parent is None:
                continue
            del waiting[task_id]
            progress = True
            if task_id in rows:
                continue
            delegate = live.delegate
            row = Run.objects.create(
                organization_id=run.organization_id,
                agent_id=delegate.agent_id,
                agent_version_id=cast(int, delegate.agent_version_id),
                user_id=run.user_id,
                surface=run.surface,
                parent_run=parent,
                subagent_task_id=task_id,
                status=RunStatus.RUNNING,
                input=live.description,
                model_label=delegate.handle.label,
                model_provider=delegate.handle.provider,
                model_name=delegate.handle.model_name,
                started_at=getattr(live.handle, "started_at", None) or now,
                last_transition_at=now,
                lease_expires_at=lease,
                accruing=True,
            )
            rows[task_id] = row
            opened[row.pk] = task_id
    runtime.accruing_rows = opened
    return opened


LATE_NOTICE = "Background delegation {name} (task {task_id}) settled after this answer: {text}"


def book_late(run_id: int, runtime: DelegationRuntime, *, final: bool = False) -> list:
    """What settled after the run answered, booked in one transaction: the delegations' rows, the
    run's totals brought up to its whole ledger (the parent row stays the authority: its cost is
    everything its ledger holds, delegates included), and one notice on its conversation per
    delegation of the run's own agent — an assistant turn of the run carrying the late spend as
    its share, so the run's turns still sum to the run, and what the next turn's model reads.
    ``final``: nothing of the run runs any more — its row stops accruing in this transaction, its
    totals the whole ledger."""

    with transaction.atomic():
        run = Run.objects.select_for_update().get(pk=run_id)
        frames, _ = book_delegations(run=run, runtime=runtime, parking=False)
        totals = ledger_totals(run_id)
        if final:
            totals.update(accruing=False, lease_expires_at=None)
        if totals:
            Run.objects.filter(pk=run_id).update(**totals)
            run.refresh_from_db()
        settled, runtime.late = runtime.late, []
        if run.conversation_id is not None:
            for index, late in enumerate(settled):
                Message.objects.create(
                    conversation_id=run.conversation_id,
                    run=run,
                    role=MessageRole.ASSISTANT,
                    content=LATE_NOTICE.format(**late)[:20000],
                    # The whole late spend rides on the first notice of the batch.
                    cost_usd=assistant_turn_cost(run, run.cost_usd) if index == 0 else Decimal("0"),
                    cost_is_partial=run.cost_is_partial,
                    run_status=run.status,
                )
    return frames


def late_notices(conversation_id: int | None, *, since) -> list:
    """What the next turn's model reads of background delegations that settled after an answer
    it already has: the notices written after ``since`` (when the run whose transcript the turn
    continues was created — anything earlier is already in that transcript). A notice is an
    assistant turn of a run written after that run's own terminal turn."""

    if conversation_id is None or since is None:
        return []
    terminal = [str(status) for status in TERMINAL_STATUSES]
    earlier_end = Message.objects.filter(
        run_id=OuterRef("run_id"),
        role=MessageRole.ASSISTANT,
        run_status__in=terminal,
        created_at__lt=OuterRef("created_at"),
    )
    notices = (
        Message.objects.filter(
            conversation_id=conversation_id,
            role=MessageRole.ASSISTANT,
            run_status__in=terminal,
            created_at__gt=since,
        )
        .filter(Exists(earlier_end))
        .order_by("created_at", "pk")
        .values_list("content", flat=True)
    )
    return [
        ModelRequest(
            parts=[
                UserPromptPart(
                    content="(A platform notice, not the person's words: a delegation you "
                    "started in the background finished after your answer.)\n" + content
                )
            ]
        )
        for content in notices
    ]
