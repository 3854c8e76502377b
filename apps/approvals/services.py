"""Every write of the approvals app: deciding, resuming, answering, and the two expiry sweeps.

Transitions are claimed with ``filter(pk=..., status=pending).update(...)`` and the row count
checked, so a second decision — including one a second after the sweep took the call — finds
nothing to claim and is refused (``AlreadyDecided``, a 409 in the API). Every write is audited in
its own transaction; the sweeps' entries have no actor (the platform on a schedule).
"""

from __future__ import annotations

import datetime as dt
import logging

from django.conf import settings
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.utils import timezone

from apps.audit.services import record_audit
from apps.orgs.permissions import APPROVALS_DECIDE, has_org_permission
from apps.runs.choices import RunStatus, StepKind, StopReason
from apps.runs.models import Run, RunStep

from .choices import ApprovalStatus, DecidedVia, QuestionStatus
from .models import Question, ToolApproval
from .parking import STEP_AWAITING_ANSWER, STEP_AWAITING_APPROVAL, STEP_EXPIRED

logger = logging.getLogger(__name__)

DECISIONS = {"approve": ApprovalStatus.APPROVED, "reject": ApprovalStatus.REJECTED}
MAX_NOTE_CHARS = 2000
EXPIRED_STEP_SENTENCE = (
    "Nobody decided on this call within {hours} hours, so it was denied for lack of time."
)
EXPIRED_RUN_SENTENCE = (
    "Nobody decided on the parked tool call within {hours} hours (APPROVAL_EXPIRY_HOURS), so the run "
    "was cancelled. What it spent before parking is kept."
)
UNANSWERED_STEP_SENTENCE = "The person did not answer in time ({hours} hours)."
UNANSWERED_RUN_SENTENCE = "The person did not answer the question within {hours} hours (QUESTION_EXPIRY_HOURS), so the run was cancelled."


class AlreadyDecided(Exception):
    """The approval (or question) is no longer pending; the message says what became of it."""


class ResumeRefused(Exception):
    """The run cannot be continued now; the sentence says why. The decision is kept."""

    def __init__(self, sentence: str) -> None:
        self.sentence = sentence
        super().__init__(sentence)


def _pending_for_run(run_id: int) -> bool:
    return (
        ToolApproval.objects.filter(run_id=run_id, status=ApprovalStatus.PENDING).exists()
        or Question.objects.filter(run_id=run_id, status=QuestionStatus.PENDING).exists()
    )


def _enqueue_resume(run_id: int) -> None:
    from .tasks import resume_run_task

    resume_run_task.delay(run_id)


# --- deciding ------------------------------------------------------------------------------------


def approval_decide(
    *, actor, approval: ToolApproval, decision: str, note: str = ""
) -> ToolApproval:
    """Approve or reject a pending call (``approvals:decide``). When it was the run's last pending
    call, the resume is enqueued on commit. A second decision raises ``AlreadyDecided``."""
    if decision not in DECISIONS:
        raise ValidationError({"decision": ["must be approve or reject"]})
    note = (note or "").strip()
    if len(note) > MAX_NOTE_CHARS:
        raise ValidationError({"note": [f"at most {MAX_NOTE_CHARS} characters"]})
    if not has_org_permission(actor, approval.organization, APPROVALS_DECIDE):
        raise PermissionDenied(f"{APPROVALS_DECIDE} is required")
    now = timezone.now()
    with transaction.atomic():
        claimed = ToolApproval.objects.filter(pk=approval.pk, status=ApprovalStatus.PENDING).update(
            status=DECIDED_STATUS(decision),
            decided_via=DecidedVia.PERSON,
            decided_by=actor,
            decided_at=now,
            note=note,
        )
        if not claimed:
            current = ToolApproval.objects.get(pk=approval.pk)
            raise AlreadyDecided(f"This call was already decided: it is {current.status}.")
        approval.refresh_from_db()
        record_audit(
            actor=actor,
            organization=approval.organization,
            action=f"approval.{decision}",
            subject=approval,
            details={"run_id": approval.run_id, "tool_name": approval.tool_name, "note": note},
        )
        run_id = approval.run_id
        if (
            not _pending_for_run(run_id)
            and Run.objects.filter(pk=run_id, status__in=PARKED).exists()
        ):
            transaction.on_commit(lambda: _enqueue_resume(run_id))
    return approval


def DECIDED_STATUS(decision: str) -> str:  # noqa: N802 (reads as a table lookup)
    return DECISIONS[decision]


PARKED = [RunStatus.AWAITING_APPROVAL, RunStatus.AWAITING_ANSWER]


# --- resuming ------------------------------------------------------------------------------------


def denial_message(approval: ToolApproval) -> str:
    if approval.status == ApprovalStatus.EXPIRED:
        return "Nobody approved this call in time, so it was not made. Tell the person."
    who = approval.decided_by.display_name if approval.decided_by else "A person"
    text = f"{who} rejected this call, so it was not made. Do not try it again; tell the person."
    if approval.note:
        text += f" Their note: {approval.note}"
    return text


def deferred_results_for(run: Run):
    """The decisions and answers of a parked run as pydantic-ai ``DeferredToolResults``.

    An approved call carries the stored arguments (``override_args``): approving executes what the
    person read, not whatever the model proposes now. A rejection is replayed as a denial the model
    relays."""
    from pydantic_ai.tools import DeferredToolResults, ToolApproved, ToolDenied
    from pydantic_ai_harness.ask_user import DECLINED

    parked_ids = {entry["tool_call_id"] for entry in (run.paused_state or {}).get("parked", [])}
    approvals = {}
    for approval in ToolApproval.objects.filter(
        run=run, tool_call_id__in=parked_ids
    ).select_related("decided_by"):
        if approval.status == ApprovalStatus.APPROVED:
            approvals[approval.tool_call_id] = ToolApproved(override_args=approval.arguments)
        elif approval.status in (ApprovalStatus.REJECTED, ApprovalStatus.EXPIRED):
            approvals[approval.tool_call_id] = ToolDenied(message=denial_message(approval))
    calls = {}
    for question in Question.objects.filter(run=run, tool_call_id__in=parked_ids):
        if question.status == QuestionStatus.ANSWERED:
            calls[question.tool_call_id] = question.answers
        elif question.status in (QuestionStatus.DECLINED, QuestionStatus.EXPIRED):
            calls[question.tool_call_id] = DECLINED
    return DeferredToolResults(approvals=approvals, calls=calls)


def run_resume(*, run_id: int) -> str | None:
    """Continue a parked run whose calls are all decided, through the same ``prepare()`` funnel.

    The spec is assembled before the run leaves the queue: a spec that stopped building refuses the
    attempt (``ResumeRefused``), keeps every decision, and leaves the run parked, so resuming works
    again as soon as the spec does. Returns the run's status after the continuation.
    """
    from apps.runs.runner import RunNotRunnable, execute_run, prepare

    run = Run.objects.select_related("organization", "agent", "agent_version", "user").get(
        pk=run_id
    )
    if run.status not in PARKED:
        raise AlreadyDecided(f"The run is {run.status}, not parked.")
    if _pending_for_run(run.pk):
        raise ResumeRefused("The run still has calls waiting for a decision or an answer.")
    try:
        prepare(run, resume=True)
    except RunNotRunnable as exc:
        sentence = f"The run could not continue yet: {exc.sentence} The decisions are kept; resume it once the agent runs again."
        Run.objects.filter(pk=run.pk).update(error=sentence[:500])
        logger.info("run %s: resume refused: %s", run.pk, exc.sentence)
        raise ResumeRefused(sentence) from exc
    Run.objects.filter(pk=run.pk).update(error="")
    return execute_run(run.pk, resume=True, deferred_tool_results=deferred_results_for(run))


# --- questions -----------------------------------------------------------------------------------


def question_answer(
    *, actor, question: Question, answers: list[dict] | None, declined: bool = False
) -> Question:
    """Answer a question card. Only the person asked may; the answer is checked against the card
    (pydantic-ai-harness ``check_response``). The run resumes when nothing else is pending."""
    from pydantic_ai_harness.ask_user import (
        AskUserAnswer,
        AskUserRequest,
        AskUserResponse,
        ask_user_result,
    )
    from pydantic_ai_harness.ask_user import Question as HarnessQuestion

    if actor is None or question.asked_user_id != actor.pk:
        raise PermissionDenied("Only the person who was asked may answer.")
    request = AskUserRequest(
        questions=tuple(HarnessQuestion.model_validate(q) for q in question.questions),
        id=question.tool_call_id,
    )
    if declined:
        response = AskUserResponse(cancelled=True)
    else:
        try:
            response = AskUserResponse(
                answers=tuple(
                    AskUserAnswer(
                        header=str(item.get("header", "")),
                        selected=tuple(item.get("selected") or ()),
                        custom_answer=item.get("custom_answer"),
                    )
                    for item in (answers or [])
                )
            )
        except (TypeError, AttributeError, ValueError) as exc:
            raise ValidationError({"answers": [f"not a list of answers: {exc}"]}) from exc
    try:
        rendered = ask_user_result(request, response)
    except ValueError as exc:
        raise ValidationError({"answers": [str(exc)]}) from exc
    with transaction.atomic():
        claimed = Question.objects.filter(pk=question.pk, status=QuestionStatus.PENDING).update(
            status=QuestionStatus.DECLINED if declined else QuestionStatus.ANSWERED,
            answers=rendered if not declined else None,
            answered_at=timezone.now(),
        )
        if not claimed:
            raise AlreadyDecided("This question is no longer waiting for an answer.")
        question.refresh_from_db()
        run_id = question.run_id
        if (
            not _pending_for_run(run_id)
            and Run.objects.filter(pk=run_id, status__in=PARKED).exists()
        ):
            transaction.on_commit(lambda: _enqueue_resume(run_id))
    return question


# --- the sweeps ----------------------------------------------------------------------------------


def _close_parked_steps(run_id: int, tool_call_ids, sentence: str) -> None:
    for step in RunStep.objects.filter(
        run_id=run_id,
        kind=StepKind.TOOL_CALL,
        detail__status__in=[STEP_AWAITING_APPROVAL, STEP_AWAITING_ANSWER],
        detail__tool_call_id__in=list(tool_call_ids),
    ):
        step.detail = {**step.detail, "status": STEP_EXPIRED, "result": sentence}
        step.save(update_fields=["detail"])


def _cancel_parked_run(run_id: int, status: str, sentence: str, now) -> bool:
    """End a parked run ``cancelled`` without continuing it: no model request, its spend kept."""
    return bool(
        Run.objects.filter(pk=run_id, status=status).update(
            status=RunStatus.CANCELLED,
            stop_reason=StopReason.CANCELLED,
            error=sentence[:500],
            ended_at=now,
            last_transition_at=now,
        )
    )


def approvals_expire_stale(*, now: dt.datetime | None = None) -> int:
    """The hourly sweep: every call pending past APPROVAL_EXPIRY_HOURS becomes ``expired`` with no
    decider and an audit entry with no actor; a run is cancelled once none of its calls is still
    pending. The only read here that crosses organizations (a schedule has no tenant); every write
    stays in the row's own organization. Returns how many calls it expired."""
    hours = settings.APPROVAL_EXPIRY_HOURS
    now = now or timezone.now()
    cutoff = now - dt.timedelta(hours=hours)
    expired = 0
    runs: set[int] = set()
    for approval in ToolApproval.objects.filter(
        status=ApprovalStatus.PENDING, created_at__lt=cutoff
    ).select_related("organization"):
        with transaction.atomic():
            claimed = ToolApproval.objects.filter(
                pk=approval.pk, status=ApprovalStatus.PENDING
            ).update(
                status=ApprovalStatus.EXPIRED,
                decided_via=DecidedVia.SWEEP,
                decided_by=None,
                decided_at=now,
            )
            if not claimed:
                continue  # a person decided in the meantime
            record_audit(
                actor=None,
                organization=approval.organization,
                action="approval.expire",
                subject=approval,
                details={
                    "run_id": approval.run_id,
                    "tool_name": approval.tool_name,
                    "after_hours": hours,
                    "by": "expiry sweep",
                },
            )
            _close_parked_steps(
                approval.run_id, [approval.tool_call_id], EXPIRED_STEP_SENTENCE.format(hours=hours)
            )
        expired += 1
        runs.add(approval.run_id)
    for run_id in runs:
        with transaction.atomic():
            if _pending_for_run(run_id):
                continue  # seed 003: a run with a call still inside its window is not ended
            if _cancel_parked_run(
                run_id, RunStatus.AWAITING_APPROVAL, EXPIRED_RUN_SENTENCE.format(hours=hours), now
            ):
                run = Run.objects.select_related("organization").get(pk=run_id)
                record_audit(
                    actor=None,
                    organization=run.organization,
                    action="run.cancel.approval_expired",
                    subject=run,
                    details={"run_id": run_id, "after_hours": hours, "by": "expiry sweep"},
                )
    if expired:
        logger.info("approval expiry sweep expired %d call(s)", expired)
    return expired


def questions_expire_stale(*, now: dt.datetime | None = None) -> int:
    """Every question pending past QUESTION_EXPIRY_HOURS: expired, and its run ends cancelled with
    the step saying the person did not answer in time (no model request)."""
    hours = settings.QUESTION_EXPIRY_HOURS
    now = now or timezone.now()
    cutoff = now - dt.timedelta(hours=hours)
    expired = 0
    for question in Question.objects.filter(
        status=QuestionStatus.PENDING, created_at__lt=cutoff
    ).select_related("organization"):
        with transaction.atomic():
            if not Question.objects.filter(pk=question.pk, status=QuestionStatus.PENDING).update(
                status=QuestionStatus.EXPIRED, answered_at=now
            ):
                continue
            _close_parked_steps(
                question.run_id,
                [question.tool_call_id],
                UNANSWERED_STEP_SENTENCE.format(hours=hours),
            )
            record_audit(
                actor=None,
                organization=question.organization,
                action="question.expire",
                subject=question,
                details={"run_id": question.run_id, "after_hours": hours, "by": "expiry sweep"},
            )
            if not _pending_for_run(question.run_id):
                _cancel_parked_run(
                    question.run_id,
                    RunStatus.AWAITING_ANSWER,
                    UNANSWERED_RUN_SENTENCE.format(hours=hours),
                    now,
                )
        expired += 1
    return expired
