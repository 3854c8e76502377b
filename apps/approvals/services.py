"""Every write of the approvals app: opening approval and question rows, deciding, answering,
and the two expiry sweeps.

Approvals sits below runs (STYLE.md) and never writes a Run row: what a decision or an expiry
means for the run — resuming it, closing its parked steps, ending it — is the runs app's, which
registers the hooks below at start (``apps/runs/apps.py``), the way ``orgs.on_organization_setup``
works.

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

from .choices import ApprovalStatus, DecidedVia, QuestionStatus
from .models import Question, ToolApproval

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


def pending_for_run(run_id: int) -> bool:
    """Is any call or question of this run still waiting for a person?"""
    return (
        ToolApproval.objects.filter(run_id=run_id, status=ApprovalStatus.PENDING).exists()
        or Question.objects.filter(run_id=run_id, status=QuestionStatus.PENDING).exists()
    )


# --- what runs registers --------------------------------------------------------------------

_CALLS_DECIDED_HOOKS: list = []
_CALLS_EXPIRED_HOOKS: list = []
_RUN_EXPIRED_HOOKS: list = []
_EXPIRY_REMINDER_HOOKS: list = []


def on_expiry_reminder(hook) -> None:
    """``hook(run_id=..., approval_ids=[...], expires_at=...)``, after the sweep claimed the
    reminder of those pending calls of one run: the notifications app tells the approval
    audience. Sending never raises into the sweep."""
    if hook not in _EXPIRY_REMINDER_HOOKS:
        _EXPIRY_REMINDER_HOOKS.append(hook)


def on_run_calls_decided(hook) -> None:
    """``hook(run_id=...)``, inside the deciding transaction, when a decision or an answer left
    nothing of the run pending: the runs app resumes it (on commit) if it is still parked."""
    if hook not in _CALLS_DECIDED_HOOKS:
        _CALLS_DECIDED_HOOKS.append(hook)


def on_parked_calls_expired(hook) -> None:
    """``hook(run_id=..., tool_call_ids=[...], sentence=...)``, inside the sweep's transaction,
    when calls of a parked run expired: the runs app closes their parked steps with the sentence."""
    if hook not in _CALLS_EXPIRED_HOOKS:
        _CALLS_EXPIRED_HOOKS.append(hook)


def on_run_expired(hook) -> None:
    """``hook(run_id=..., waiting_for="approval"|"question", sentence=..., after_hours=..., now=...)``,
    inside the sweep's transaction, when nothing of a parked run is pending any more and what it
    waited on expired: the runs app ends the run (cancelled, no model request, its spend kept)."""
    if hook not in _RUN_EXPIRED_HOOKS:
        _RUN_EXPIRED_HOOKS.append(hook)


def _calls_decided(run_id: int) -> None:
    for hook in _CALLS_DECIDED_HOOKS:
        hook(run_id=run_id)


def _calls_expired(run_id: int, tool_call_ids: list[str], sentence: str) -> None:
    for hook in _CALLS_EXPIRED_HOOKS:
        hook(run_id=run_id, tool_call_ids=tool_call_ids, sentence=sentence)


def _run_expired(run_id: int, waiting_for: str, sentence: str, after_hours, now) -> None:
    for hook in _RUN_EXPIRED_HOOKS:
        hook(
            run_id=run_id,
            waiting_for=waiting_for,
            sentence=sentence,
            after_hours=after_hours,
            now=now,
        )


# --- opening (the runner parks a run) ----------------------------------------------------------


def approval_open(
    *,
    run,
    tool_call_id: str,
    tool_name: str,
    tool_id: str,
    capability_id: str,
    arguments: dict,
    delegate_name: str = "",
    delegate_agent_id: int | None = None,
) -> ToolApproval:
    """One pending row per gated call of a run that is parking (apps/runs/parking.py). A call a
    delegate made names it: the queue must say who sends the email, the agent someone is talking
    to or a specialist called researcher (seed 003, "Una aprobación dentro de una delegación")."""
    return ToolApproval.objects.create(
        organization_id=run.organization_id,
        run=run,
        agent_id=run.agent_id,
        delegate_name=delegate_name,
        delegate_agent_id=delegate_agent_id,
        tool_call_id=tool_call_id,
        tool_name=tool_name,
        tool_id=tool_id,
        capability_id=capability_id,
        arguments=arguments,
    )


def question_open(*, run, tool_call_id: str, questions: list[dict]) -> Question:
    """One pending question card per ``ask_user_question`` call, asked of the run's person."""
    return Question.objects.create(
        organization_id=run.organization_id,
        run=run,
        asked_user_id=run.user_id,
        tool_call_id=tool_call_id,
        questions=questions,
    )


def approval_record_result(*, approval_id: int, result: str) -> None:
    """What an approved (or denied) call returned, once the resumed run settled it."""
    ToolApproval.objects.filter(pk=approval_id).update(result=result)


def approvals_record_standing(*, run, waived) -> None:
    """An approve-everything session's waived calls, written as standing rows."""
    now = timezone.now()
    for call in waived:
        ToolApproval.objects.get_or_create(
            run=run,
            tool_call_id=call.tool_call_id,
            defaults={
                "organization_id": run.organization_id,
                "agent_id": run.agent_id,
                "tool_name": call.tool_name,
                "tool_id": call.tool_id,
                "capability_id": call.capability_id,
                "arguments": call.arguments,
                "status": ApprovalStatus.APPROVED,
                "decided_via": DecidedVia.STANDING,
                "decided_by_id": run.user_id,
                "decided_at": now,
                "note": "Approved by standing consent for this conversation (approve everything); nobody read the arguments before the call.",
            },
        )


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
        if not pending_for_run(approval.run_id):
            _calls_decided(approval.run_id)
    return approval


def DECIDED_STATUS(decision: str) -> str:  # noqa: N802 (reads as a table lookup)
    return DECISIONS[decision]


# --- what a resumed run is told -----------------------------------------------------------------


def denial_message(approval: ToolApproval) -> str:
    if approval.status == ApprovalStatus.EXPIRED:
        return "Nobody approved this call in time, so it was not made. Tell the person."
    who = approval.decided_by.display_name if approval.decided_by else "A person"
    text = f"{who} rejected this call, so it was not made. Do not try it again; tell the person."
    if approval.note:
        text += f" Their note: {approval.note}"
    return text


def deferred_results_for(run):
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
        if not pending_for_run(question.run_id):
            _calls_decided(question.run_id)
    return question


# --- the sweeps ----------------------------------------------------------------------------------


def approvals_remind_expiring(*, now: dt.datetime | None = None) -> int:
    """Part of the hourly sweep: every call still pending within APPROVAL_EXPIRY_WARNING_HOURS of
    its expiry gets one reminder to the approval audience, with the link to the queue — so a call
    is never denied by time without anyone having been told it was about to be. Each call is
    claimed (``expiry_reminder_sent_at`` set where it was null) before anything is sent, so two
    sweeps never remind twice; one reminder per run lists its claimed calls. Returns how many
    calls it reminded."""
    warning_hours = settings.APPROVAL_EXPIRY_WARNING_HOURS
    if not warning_hours:
        return 0
    hours = settings.APPROVAL_EXPIRY_HOURS
    now = now or timezone.now()
    # Expires at created + hours; reminded from created + hours − warning (the creation itself
    # when the warning is as long as the whole window).
    reminder_from = now - dt.timedelta(hours=max(hours - warning_hours, 0))
    expiry_cutoff = now - dt.timedelta(hours=hours)
    due = ToolApproval.objects.filter(
        status=ApprovalStatus.PENDING,
        expiry_reminder_sent_at__isnull=True,
        created_at__lt=reminder_from,
        created_at__gte=expiry_cutoff,  # past its expiry, the sweep denies it instead
    )
    by_run: dict[int, list[ToolApproval]] = {}
    for approval in due.order_by("created_at", "pk"):
        claimed = ToolApproval.objects.filter(
            pk=approval.pk, status=ApprovalStatus.PENDING, expiry_reminder_sent_at__isnull=True
        ).update(expiry_reminder_sent_at=now)
        if claimed:
            by_run.setdefault(approval.run_id, []).append(approval)
    for run_id, approvals in by_run.items():
        expires_at = min(a.created_at for a in approvals) + dt.timedelta(hours=hours)
        for hook in _EXPIRY_REMINDER_HOOKS:
            try:
                hook(run_id=run_id, approval_ids=[a.pk for a in approvals], expires_at=expires_at)
            except Exception:  # a reminder that cannot be sent never stops the sweep
                logger.exception("expiry reminder for run %s failed", run_id)
    reminded = sum(len(a) for a in by_run.values())
    if reminded:
        logger.info("approval expiry sweep reminded %d call(s)", reminded)
    return reminded


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
            _calls_expired(
                approval.run_id, [approval.tool_call_id], EXPIRED_STEP_SENTENCE.format(hours=hours)
            )
        expired += 1
        runs.add(approval.run_id)
    for run_id in runs:
        with transaction.atomic():
            if pending_for_run(run_id):
                continue  # seed 003: a run with a call still inside its window is not ended
            _run_expired(run_id, "approval", EXPIRED_RUN_SENTENCE.format(hours=hours), hours, now)
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
            _calls_expired(
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
            if not pending_for_run(question.run_id):
                _run_expired(
                    question.run_id,
                    "question",
                    UNANSWERED_RUN_SENTENCE.format(hours=hours),
                    hours,
                    now,
                )
        expired += 1
    return expired
