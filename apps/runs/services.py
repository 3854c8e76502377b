"""Every write of the runs app: creating, claiming, cancelling, finishing and reaping runs.

Transitions are claimed with a conditional UPDATE and the row count checked (STYLE.md), so two
writers never both move a run.
"""

from __future__ import annotations

import datetime as dt
import logging
from decimal import Decimal

from django.conf import settings
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.utils import timezone
from psycopg.types.numeric import Int8
from pydantic_ai.messages import ModelMessagesTypeAdapter

from agenticos.loopdb import Statement
from agenticos.outage import OUTAGE_ERRORS
from apps.agents.selectors import can
from apps.audit.services import record_audit
from apps.orgs.permissions import AGENTS_RUN, RUNS_VIEW, SETTINGS_MANAGE, has_org_permission
from apps.spend.models import Ledger
from apps.spend.services import budget_counters_reconcile, month_of

from . import claiming, finishing, hooks, queue, states
from .choices import (
    LIVE_STATUSES,
    PARKED_STATUSES,
    TERMINAL_STATUSES,
    MessageRole,
    RunStatus,
    StepKind,
    StopReason,
    Surface,
)
from .delegation.booking import book_abandoned, delegated_totals, ledger_totals
from .events import announce_run
from .media import conversation_media_delete
from .models import Conversation, Message, Run, RunStep
from .parking import STEP_AWAITING_ANSWER, STEP_AWAITING_APPROVAL, STEP_EXPIRED

logger = logging.getLogger(__name__)

REAPED_SENTENCE = (
    "The stale-run sweep ended this run: it was still {status} {hours} hours after its last "
    "transition, so the process running it most likely died."
)
MAX_INPUT_CHARS = 100_000
CANCELLED_ORPHAN_SENTENCE = "The run was cancelled; the worker running it had stopped."
WORKER_LOST_SENTENCE = (
    "The worker running this run stopped before the run ended; what it spent until then is booked."
)


def _enqueue(run_id: int) -> None:
    queue.enqueue(queue.EXECUTE_RUN, run_id)


@transaction.atomic
def run_create(
    *,
    actor,
    organization,
    agent,
    input: str,
    conversation: Conversation | None = None,
    surface: str = Surface.API,
    parent_run: Run | None = None,
    approval_mode: str = "follow",
    enqueue: bool = True,
    exposure_id: int | None = None,
) -> Run:
    """Create a run ``queued`` against the agent's published version; enqueue it on commit.

    ``approval_mode`` is the chat session's (follow | approve_all | ask_all); ``prepare()`` checks
    it and refuses the turn with a sentence when the session may not have it (apps.approvals.gate).
    ``enqueue=False`` leaves the run for its caller to drive (a trigger's fire drives its run
    itself, so the fire can report how the run's recording went: apps/triggers).
    ``exposure_id`` is the chat binding that admitted the run (apps.channels).
    """
    if agent.organization_id != organization.pk:
        raise ValidationError({"agent_id": "no such agent"})
    # agents:run over the organization, or a run grant on this one agent (apps.agents.selectors).
    if actor is not None and not can(actor, agent, "run"):
        raise PermissionDenied(f"{AGENTS_RUN} or a run grant on {agent.name} is required")
    if agent.current_version_id is None:
        raise ValidationError(
            {"agent_id": "the agent has no published version yet; publish it first"}
        )
    if agent.status == "archived":
        raise ValidationError({"agent_id": "the agent is archived"})
    if not input or not input.strip():
        raise ValidationError({"input": "must not be empty"})
    if len(input) > MAX_INPUT_CHARS:
        raise ValidationError({"input": f"at most {MAX_INPUT_CHARS} characters"})
    if conversation is not None and (
        conversation.organization_id != organization.pk or conversation.agent_id != agent.pk
    ):
        raise ValidationError({"conversation_id": "the conversation belongs to another agent"})
    continued = conversation is not None
    if conversation is None:
        conversation = Conversation.objects.create(
            organization=organization,
            agent=agent,
            user=actor,
            surface=surface,
            title=input.strip()[:200],
        )
    run = Run.objects.create(
        organization=organization,
        agent=agent,
        agent_version_id=agent.current_version_id,
        user=actor,
        surface=surface,
        conversation=conversation,
        parent_run=parent_run,
        input=input,
        status=RunStatus.QUEUED,
        approval_mode=approval_mode,
        exposure_id=exposure_id,
        on_queue=enqueue,
    )
    Message.objects.create(conversation=conversation, run=run, role=MessageRole.USER, content=input)
    if continued:  # a conversation created just now was updated just now
        Conversation.objects.filter(pk=conversation.pk).update(updated_at=timezone.now())

    def after_commit() -> None:
        # The run is committed: a broker or Redis outage now must not turn the answer into an
        # error, for the run exists and the requeue sweep sends it once the broker is back
        # (apps/runs/requeue.py, docs/runner.md "Requeue"). The caller answers with the run.
        try:
            announce_run(conversation.pk, run.pk)
        except OUTAGE_ERRORS as exc:
            logger.warning("run %s not announced (%s); its followers see it on reload", run.pk, exc)
        if enqueue:
            try:
                _enqueue(run.pk)
            except OUTAGE_ERRORS as exc:
                logger.warning("run %s not enqueued (%s); the requeue sweep sends it", run.pk, exc)

    transaction.on_commit(after_commit)
    return run


def run_claim_running(run_id: int, *, resume: bool = False) -> claiming.ClaimedRun | None:
    """queued → running (or parked → running for a resume), committed before any model call;
    the run read back with everything preparing it reads (apps/runs/claiming.py), or None when
    it was not there to claim (cancelled, reaped, or claimed by another worker)."""
    now = timezone.now()
    return claiming.claim_running(
        run_id,
        from_statuses=(
            [RunStatus.AWAITING_APPROVAL, RunStatus.AWAITING_ANSWER]
            if resume
            else [RunStatus.QUEUED]
        ),
        now=now,
        # The claiming worker vouches for the run from now on (renewed by its watcher).
        lease_expires_at=now + dt.timedelta(seconds=settings.RUN_LEASE_SECONDS),
        # A resume keeps the original started_at: the run spans both segments (seed 003).
        keep_started_at=resume,
    )


_CANCELS_REQUESTED = Statement(
    "runs_cancel_requested",
    f'SELECT id FROM "{Run._meta.db_table}" WHERE id = ANY(%(runs)s) AND cancel_requested_at IS NOT NULL',
)
_LEASES_RENEW = Statement(
    "runs_lease_renew",
    f'UPDATE "{Run._meta.db_table}" SET lease_expires_at = now() + make_interval(secs => %(seconds)s) '
    # A finished run holds a lease only while background delegations outlive its answer
    # (apps/runs/delegation.py ``outlive``): renewed like a running one's until they settle.
    "WHERE id = ANY(%(runs)s) AND (status = 'running' OR lease_expires_at IS NOT NULL)",
)


async def runs_cancel_requested(db, run_ids: list[int]) -> list[int]:
    """Which of these runs has someone asked to cancel? One statement for every run a worker
    holds, sent from its event loop (apps/runs/runtime.py)."""
    rows = await db.fetch(_CANCELS_REQUESTED, {"runs": [Int8(run_id) for run_id in run_ids]})
    return [row[0] for row in rows]


async def runs_lease_renew(db, run_ids: list[int]) -> None:
    """The worker still holds these runs: push their leases RUN_LEASE_SECONDS ahead."""
    if run_ids:
        await db.fetch(
            _LEASES_RENEW,
            {
                "runs": [Int8(run_id) for run_id in run_ids],
                "seconds": float(settings.RUN_LEASE_SECONDS),
            },
        )


def may_cancel(user, run: Run) -> bool:
    """The person who started a run may stop it; so may anyone who reads every run (runs:view)."""
    return (run.user_id == user.pk and can(user, run.agent, "run")) or has_org_permission(
        user, run.organization, RUNS_VIEW
    )


@transaction.atomic
def run_cancel(*, actor, run: Run) -> Run:
    """Stop a run: a queued one ends here; a running one is stopped by its worker, which books
    what it spent. Cancelling a finished run is refused."""
    if actor is not None and not may_cancel(actor, run):
        raise PermissionDenied("Only the person who started the run, or runs:view, may cancel it.")
    now = timezone.now()
    ended_queued = states.claim(
        run.pk,
        from_statuses=[RunStatus.QUEUED],
        to_status=RunStatus.CANCELLED,
        stop_reason=StopReason.CANCELLED,
        error="The run was cancelled before it started.",
        cancel_requested_at=now,
        ended_at=now,
        last_transition_at=now,
    )
    if not ended_queued:
        flagged = Run.objects.filter(
            pk=run.pk,
            status__in=[RunStatus.RUNNING, RunStatus.AWAITING_APPROVAL, RunStatus.AWAITING_ANSWER],
            cancel_requested_at__isnull=True,
        ).update(cancel_requested_at=now)
        # No worker is left to notice a running run whose lease lapsed: it ends here, with what
        # its ledger booked — also when an earlier cancel already flagged it and nobody noticed.
        orphan_ended = _end_orphan(
            run.pk,
            from_status=RunStatus.RUNNING,
            now=now,
            status=RunStatus.CANCELLED,
            stop_reason=StopReason.CANCELLED,
            error=CANCELLED_ORPHAN_SENTENCE,
            lease_lapsed=True,
        )
        if orphan_ended:
            _reconcile_counters({run.organization_id}, now)
        elif not flagged:
            current = Run.objects.get(pk=run.pk)
            if current.status in TERMINAL_STATUSES:
                # A run that answered may still have background delegations running (they
                # outlive the answer): cancelling it cancels them (its worker's watcher).
                if not _cancel_outliving(current, now):
                    raise ValidationError({"status": f"the run is already {current.status}"})
            else:
                return current  # a cancel already on its way: asking twice changes nothing
        else:
            # A parked run has no worker to notice: it ends here.
            parked = Run.objects.filter(pk=run.pk).values_list("paused_state", flat=True).first()
            if states.claim(
                run.pk,
                from_statuses=PARKED_STATUSES,
                to_status=RunStatus.CANCELLED,
                stop_reason=StopReason.CANCELLED,
                error="The run was cancelled.",
                ended_at=now,
                last_transition_at=now,
            ):
                _book_abandoned_delegations(run.pk, parked, ABANDONED_CANCELLED_SENTENCE)
    record_audit(
        actor=actor,
        organization=run.organization,
        action="run.cancel",
        subject=run,
        details={"run_id": run.pk},
    )
    run.refresh_from_db()
    if run.status == RunStatus.CANCELLED and run.ended_at == now:
        # Ended here (queued, parked, or its worker gone): no segment runs to say so.
        hooks.run_cancelled(run.pk)
    return run


def _skipped_notice(payload) -> dict:
    keys = ("strategy", "overhead_tokens", "trigger_tokens", "window_tokens")
    return {key: payload[key] for key in keys if key in payload}


ABANDONED_CANCELLED_SENTENCE = "The run was cancelled while this delegation was parked."


def _cancel_outliving(run: Run, now: dt.datetime) -> bool:
    """Flag a finished run's delegations still running in the background, and the run itself
    (what its worker's watcher looks at for those that have no row, an inline specialist's: a
    finished run keeps a live lease exactly while they run). Whether there were any."""
    flagged = Run.objects.filter(
        parent_run=run, status=RunStatus.RUNNING, cancel_requested_at__isnull=True
    ).update(cancel_requested_at=now)
    holding = run.lease_expires_at is not None and run.lease_expires_at > now
    if flagged or holding:
        Run.objects.filter(pk=run.pk, cancel_requested_at__isnull=True).update(
            cancel_requested_at=now
        )
    return bool(flagged or holding)


def _book_abandoned_delegations(run_id: int, paused_state, sentence: str) -> None:
    """A parked run ended without continuing: its parked delegations get their rows."""
    if not paused_state or not (
        paused_state.get("delegates") or paused_state.get("delegation_rows")
    ):
        return
    run = Run.objects.get(pk=run_id)
    run.paused_state = paused_state
    book_abandoned(run, sentence=sentence)


def run_finish(
    *,
    run: Run,
    outcome,
    model,
    records,
    messages,
    output: str,
    transcript=None,
    compaction_skipped: dict | None = None,
) -> Run:
    """Book the run's end: tokens, cost, transcript, status, its assistant turn and its steps,
    in one statement (apps/runs/finishing.py).

    Called from the runner's finally block outside any transaction: the atomic block below is
    the explicit commit (seed 003: the session context would roll back on the very exception
    being recorded, and is never reached at all on a cancellation). Inside a caller's transaction
    (the runner's booking) it joins that one instead of opening a savepoint: a failure rolls back
    the caller's block with it.
    """
    now = timezone.now()
    fields = {
        "stop_reason": outcome.stop_reason,
        "error": outcome.error[:500],
        "budget_refusal": outcome.budget_refusal,
        "output": output,
        # A run that parks has not ended: it waits for a person (apps/runs/parking.py).
        "ended_at": None if outcome.status in PARKED_STATUSES else now,
    }
    if model is not None:
        fields.update(
            model_label=model.label, model_provider=model.provider, model_name=model.model_name
        )
    if transcript is not None:
        # Dumped already, its large parts in storage (apps/runs/media.py).
        fields["transcript"] = transcript
    elif messages is not None:
        fields["transcript"] = ModelMessagesTypeAdapter.dump_python(messages, mode="json")
    # The compaction notice rides on the request it preceded (the last one if that request
    # was never sent), so the chat draws it again after a reload.
    notice_at = (
        min(compaction_skipped.get("request", 0), len(records) - 1) if compaction_skipped else -1
    )
    steps = [
        finishing.Step(
            detail={
                "model": record.model_name,
                "tool_calls": record.tool_calls,
                "priced": record.priced,
                **(
                    {"compaction_skipped": _skipped_notice(compaction_skipped)}
                    if index == notice_at
                    else {}
                ),
            },
            input_tokens=record.input_tokens,
            output_tokens=record.output_tokens,
            cost_usd=record.cost_usd,
        )
        for index, record in enumerate(records)
    ]
    with transaction.atomic(savepoint=False):
        finished = finishing.finish(
            run.pk,
            to_status=outcome.status,
            fields=fields,
            steps=steps,
            content=output or "",
            context_tokens=records[-1].input_tokens if records else None,
            now=now,
        )
    if finished is None:
        # A sweep ended it for good while it was still alive, or it never ran: what it says stays.
        logger.warning(
            "run %s: finish found it no longer running; outcome %s not written",
            run.pk,
            outcome.status,
        )
        return Run.objects.get(pk=run.pk)
    return finished


def runs_reap_stale(*, now: dt.datetime | None = None) -> int:
    """End as ``failed`` every run still queued or running STALE_RUN_REAPED_AFTER_HOURS after its
    last transition (0 turns the sweep off). Returns how many it ended.

    The run row keeps what its ledger booked request by request, marked partial: the request in
    flight when the worker died may have been billed and never booked, so the figure is a floor.
    Nobody is notified (seed 003: the sweep has neither the agent nor its spec at hand).
    """
    hours = settings.STALE_RUN_REAPED_AFTER_HOURS
    if not hours:
        return 0
    now = now or timezone.now()
    cutoff = now - dt.timedelta(hours=hours)
    reaped = 0
    organizations: set[int] = set()
    stale = Run.objects.filter(status__in=LIVE_STATUSES, last_transition_at__lt=cutoff)
    for run_id, status, organization_id in stale.values_list("pk", "status", "organization_id"):
        if _end_orphan(
            run_id,
            from_status=status,
            now=now,
            status=RunStatus.FAILED,
            stop_reason=StopReason.REAPED,
            error=REAPED_SENTENCE.format(status=status, hours=hours),
            older_than=cutoff,
        ):
            reaped += 1
            organizations.add(organization_id)
    _reconcile_counters(organizations, now)
    if reaped:
        logger.info("stale-run sweep ended %d run(s)", reaped)
    return reaped


def _end_orphan(
    run_id: int,
    *,
    from_status: str,
    now: dt.datetime,
    status: str,
    stop_reason: str,
    error: str,
    lease_lapsed: bool = False,
    older_than: dt.datetime | None = None,
) -> bool:
    """End a run nothing alive will end, with the totals its ledger holds: every request was
    committed as it was settled, so a dead worker's spend is on the row (a floor, marked partial:
    the request in flight when it died may have been billed and never booked). Claimed against
    the status it was read with (and a lapsed lease, or its age), so a run that moved meanwhile
    is left alone."""
    ledger = Ledger.objects.filter(run_id=run_id).first()
    fields = {
        "stop_reason": stop_reason,
        "error": error,
        "ended_at": now,
        "last_transition_at": now,
        "lease_expires_at": None,
        "accruing": False,
    }
    if ledger is None:
        # A delegation that outlived its run's answer books into that run's ledger: its row
        # keeps its own entries, and the run's row is brought up to its whole ledger.
        fields.update(_outlived_totals(run_id))
    if ledger is not None and ledger.request_count:
        fields.update(
            cost_usd=ledger.cost_usd,
            cost_is_partial=True,
            input_tokens=ledger.input_tokens,
            output_tokens=ledger.output_tokens,
            request_count=ledger.request_count,
        )
    where: dict = {}
    if lease_lapsed:
        where["lease_expires_at__lt"] = now
    if older_than is not None:
        where["last_transition_at__lt"] = older_than
    return states.claim(
        run_id, from_statuses=[from_status], to_status=status, where=where, **fields
    )


def run_fail_undelivered(run_id: int, *, now: dt.datetime, sentence: str) -> bool:
    """End as ``failed``/``undelivered`` a run still queued that no worker ever took (the requeue
    sweep's last word); False when it moved meanwhile (a worker claimed it after all)."""
    return _end_orphan(
        run_id,
        from_status=RunStatus.QUEUED,
        now=now,
        status=RunStatus.FAILED,
        stop_reason=StopReason.UNDELIVERED,
        error=sentence,
    )


def _outlived_totals(run_id: int) -> dict:
    row = (
        Run.objects.filter(pk=run_id, parent_run__isnull=False)
        .exclude(subagent_task_id="")
        .values("subagent_task_id", "parent_run_id", "parent_run__parent_run_id")
        .first()
    )
    if row is None:
        return {}
    top = Run.objects.get(pk=row["parent_run_id"])
    while top.parent_run_id is not None:
        top = Run.objects.get(pk=top.parent_run_id)
    ledger = Ledger.objects.filter(run_id=top.pk).first()
    if ledger is None:
        return {}
    Run.objects.filter(pk=top.pk).update(
        cost_usd=ledger.cost_usd,
        cost_is_partial=ledger.cost_is_partial,
        input_tokens=ledger.input_tokens,
        output_tokens=ledger.output_tokens,
        request_count=ledger.request_count,
    )
    totals = delegated_totals(top, row["subagent_task_id"])
    if not totals["requests"]:
        return {}
    return {
        "cost_usd": totals["cost"] or Decimal("0"),
        "cost_is_partial": True,
        "input_tokens": totals["input"] or 0,
        "output_tokens": totals["output"] or 0,
        "request_count": totals["requests"],
    }


def _reconcile_counters(organization_ids: set[int], now: dt.datetime) -> None:
    """A dead worker's reservations stay on the counters: recount them from the ledger, leaving
    the reservations of runs still running alone."""
    month = month_of(now)
    for organization_id in organization_ids:
        busy = set(
            Run.objects.filter(
                organization_id=organization_id, status=RunStatus.RUNNING
            ).values_list("agent_id", flat=True)
        )
        budget_counters_reconcile(organization_id=organization_id, busy_agent_ids=busy, month=month)


def runs_sweep_lapsed_leases(*, now: dt.datetime | None = None) -> int:
    """Fail every running run whose worker stopped renewing its lease, with the ledger's totals.
    Returns how many it ended. Runs no lease covers (claimed before leases existed) are left to
    the stale-run reaper."""
    now = now or timezone.now()
    lapsed = Run.objects.filter(status=RunStatus.RUNNING, lease_expires_at__lt=now)
    ended = 0
    organizations: set[int] = set()
    for run_id, organization_id, cancel_asked in lapsed.values_list(
        "pk", "organization_id", "cancel_requested_at"
    ):
        # Someone asked to cancel it before anyone noticed the worker was gone: it ends as asked.
        outcome = (
            (RunStatus.CANCELLED, StopReason.CANCELLED, CANCELLED_ORPHAN_SENTENCE)
            if cancel_asked is not None
            else (RunStatus.FAILED, StopReason.WORKER_LOST, WORKER_LOST_SENTENCE)
        )
        if _end_orphan(
            run_id,
            from_status=RunStatus.RUNNING,
            now=now,
            status=outcome[0],
            stop_reason=outcome[1],
            error=outcome[2],
            lease_lapsed=True,
        ):
            ended += 1
            organizations.add(organization_id)
    # Answered runs still accruing (background delegations outlived their answer) whose worker
    # stopped: after their delegations' rows above, each is final with its whole ledger.
    accruing = Run.objects.filter(accruing=True, lease_expires_at__lt=now)
    for run_id, organization_id in accruing.values_list("pk", "organization_id"):
        if run_settle_accruing(run_id, now=now):
            organizations.add(organization_id)
    _reconcile_counters(organizations, now)
    if ended:
        logger.warning("lease sweep failed %d run(s) whose worker stopped", ended)
    return ended


def run_settle_accruing(run_id: int, *, now: dt.datetime) -> bool:
    """A run that answered and was still accruing when its worker stopped: its row becomes final
    with the totals its ledger holds — every request its delegates booked before the worker died
    — marked a floor (the request in flight may have been billed and never booked). Its status
    stays the answer's; only a lapsed lease is settled, so a live worker's run is left alone."""
    fields = ledger_totals(run_id)
    if fields:
        fields["cost_is_partial"] = True
    settled = Run.objects.filter(pk=run_id, accruing=True, lease_expires_at__lt=now).update(
        accruing=False, lease_expires_at=None, **fields
    )
    return settled == 1


# --- a parked run whose wait expired (the approvals sweeps tell runs through their hooks) ------


def run_close_expired_steps(*, run_id: int, tool_call_ids, sentence: str) -> None:
    """The parked steps of calls nobody decided in time close with the sweep's sentence."""
    for step in RunStep.objects.filter(
        run_id=run_id,
        kind=StepKind.TOOL_CALL,
        detail__status__in=[STEP_AWAITING_APPROVAL, STEP_AWAITING_ANSWER],
        detail__tool_call_id__in=list(tool_call_ids),
    ):
        step.detail = {**step.detail, "status": STEP_EXPIRED, "result": sentence}
        step.save(update_fields=["detail"])


_PARKED_ON = {"approval": RunStatus.AWAITING_APPROVAL, "question": RunStatus.AWAITING_ANSWER}


def run_expire_parked(
    *, run_id: int, waiting_for: str, sentence: str, after_hours, now: dt.datetime
) -> bool:
    """End a parked run ``cancelled`` without continuing it: no model request, its spend kept.
    A run that expired waiting on an approval is audited (no actor: the platform on a schedule)."""
    parked = Run.objects.filter(pk=run_id).values_list("paused_state", flat=True).first()
    ended = states.claim(
        run_id,
        from_statuses=[_PARKED_ON[waiting_for]],
        to_status=RunStatus.CANCELLED,
        stop_reason=StopReason.CANCELLED,
        error=sentence[:500],
        ended_at=now,
        last_transition_at=now,
    )
    if ended:
        # Its parked delegations never continue either: each keeps an honest row.
        _book_abandoned_delegations(run_id, parked, sentence)
    if ended and waiting_for == "approval":
        run = Run.objects.select_related("organization").get(pk=run_id)
        record_audit(
            actor=None,
            organization=run.organization,
            action="run.cancel.approval_expired",
            subject=run,
            details={"run_id": run_id, "after_hours": after_hours, "by": "expiry sweep"},
        )
    return ended


UNRECORDED_SENTENCE = (
    "The run's end could not be recorded (its final write did not commit); what it spent is booked."
)


def run_fail_unrecorded(run_id: int) -> bool:
    """End a run still ``running`` whose final booking raised and rolled back: ``failed`` with the
    ledger's totals (a floor), never the half-written end. Returns whether it ended it."""
    now = timezone.now()
    run = Run.objects.filter(pk=run_id).values("organization_id").first()
    ended = _end_orphan(
        run_id,
        from_status=RunStatus.RUNNING,
        now=now,
        status=RunStatus.FAILED,
        stop_reason=StopReason.INTERNAL_ERROR,
        error=UNRECORDED_SENTENCE,
    )
    if ended and run is not None:
        _reconcile_counters({run["organization_id"]}, now)
    return ended


# --- deleting a conversation --------------------------------------------------------------------


class ConversationBusy(Exception):
    """A run of the conversation is still queued, running or waiting on a person."""

    def __init__(self, sentence: str) -> None:
        self.sentence = sentence
        super().__init__(sentence)


def may_delete_conversation(user, conversation: Conversation) -> bool:
    """A person deletes their own conversations; an owner or admin (settings:manage) any of the
    organization's. Reading every run (runs:view) is no right to delete what others said."""
    return conversation.user_id == user.pk or has_org_permission(
        user, conversation.organization, SETTINGS_MANAGE
    )


def conversation_delete(*, actor, conversation: Conversation) -> None:
    """Delete a conversation: its messages (and their ratings) with it, its stored media after
    the commit. Its runs stay, unlinked: they are the run history and the bill (seed 003), and a
    reference in their transcripts to a blob that went with the thread reads as a placeholder.

    Refused while a run of it is live or parked: that run would book its answer into a thread
    that no longer exists."""
    if not may_delete_conversation(actor, conversation):
        raise PermissionDenied(
            "Only the person whose conversation it is, or settings:manage, may delete it."
        )
    organization_id, conversation_id = conversation.organization_id, conversation.pk
    with transaction.atomic():
        locked = Conversation.objects.select_for_update().get(pk=conversation_id)
        runs = Run.objects.filter(conversation_id=conversation_id)
        if runs.filter(status__in=[*LIVE_STATUSES, *PARKED_STATUSES]).exists():
            raise ConversationBusy(
                "A run of this conversation is still going or waiting on a person; "
                "cancel it or let it end first."
            )
        record_audit(
            actor=actor,
            organization=conversation.organization,
            action="conversation.delete",
            subject=locked,
            details={
                "conversation_id": conversation_id,
                "agent_id": locked.agent_id,
                "messages": locked.messages.count(),
                "runs": runs.count(),
            },
        )
        locked.delete()
        # The thread's blobs go with it, once the deletion is certain (a blob is no row to roll
        # back); a content hash does not say who else references it, the prefix does.
        transaction.on_commit(lambda: _delete_media_of(organization_id, conversation_id))


def _delete_media_of(organization_id: int, conversation_id: int) -> None:
    try:
        conversation_media_delete(organization_id=organization_id, conversation_id=conversation_id)
    except Exception:
        # The conversation is gone either way; blobs left behind are named in the log.
        logger.exception(
            "conversation %s: deleting its stored media (media/%s/%s/) failed",
            conversation_id,
            organization_id,
            conversation_id,
        )
