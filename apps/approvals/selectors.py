"""Every read a user can reach: the approval queue and log, a run's parked calls and questions.

Scoped to the caller's organization here and nowhere else; the queue, the API, the console tab,
the admin and the export all read through ``approvals_visible_to`` and ``ApprovalFilters``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.core.exceptions import ValidationError
from django.db.models import Min, QuerySet
from django.utils import timezone

from agenticos import params as parsing
from apps.audit.selectors import Window, parse_window
from apps.orgs.permissions import APPROVALS_DECIDE, has_org_permission

from .choices import ApprovalStatus, DecidedVia, QuestionStatus
from .models import Question, ToolApproval

TRUE_WORDS = {"true", "1", "yes"}
FALSE_WORDS = {"false", "0", "no"}


def approvals_visible_to(user, organization) -> QuerySet[ToolApproval]:
    """The organization's approval rows for someone with approvals:decide; nothing otherwise.

    The agent and the run are inner joins (both cascade); the two people are outer joins, because
    a decision survives the decider's account and a widget visitor is anonymous (seed 003)."""
    if organization is None or not has_org_permission(user, organization, APPROVALS_DECIDE):
        return ToolApproval.objects.none()
    return ToolApproval.objects.filter(organization=organization).select_related(
        "agent", "run", "run__user", "decided_by"
    )


@dataclass(frozen=True)
class ApprovalFilters:
    statuses: tuple[str, ...] = (ApprovalStatus.PENDING,)
    triggered_by_user_id: int | None = None
    window: Window = field(default_factory=Window)
    oldest_first: bool = True

    def apply(self, approvals: QuerySet[ToolApproval]) -> QuerySet[ToolApproval]:
        approvals = approvals.filter(status__in=self.statuses)
        if self.triggered_by_user_id is not None:
            # Whose runs parked the call: read from the run (an approval belongs to a run, a run to a person).
            approvals = approvals.filter(run__user_id=self.triggered_by_user_id)
        approvals = self.window.apply(approvals, "created_at")
        order = ["created_at", "pk"] if self.oldest_first else ["-created_at", "-pk"]
        return approvals.order_by(*order)

    def as_details(self) -> dict:
        return {
            "status": list(self.statuses),
            "triggered_by_user_id": self.triggered_by_user_id,
            "oldest_first": self.oldest_first,
        }


def parse_approval_filters(params) -> ApprovalFilters:
    """Query parameters of GET /approvals/ (and its export and the console tab); 422 on a bad value."""
    errors: dict[str, list[str]] = {}
    statuses = tuple(value for value in params.getlist("status") if value != "") or (
        ApprovalStatus.PENDING,
    )
    unknown = [value for value in statuses if value not in ApprovalStatus.values]
    if unknown:
        errors["status"] = [f"{', '.join(unknown)}: use {', '.join(ApprovalStatus.values)}"]
    triggered = params.get("triggered_by_user_id")
    triggered_id = None
    if triggered not in (None, ""):
        triggered_id = parsing.parse_id("triggered_by_user_id", triggered, errors)
    oldest = str(params.get("oldest_first", "true")).strip().lower()
    if oldest not in TRUE_WORDS | FALSE_WORDS:
        errors["oldest_first"] = ["must be true or false"]
    try:
        window = parse_window(params, "created_from", "created_to")
    except ValidationError as exc:
        errors.update({k: [str(m) for m in v] for k, v in exc.message_dict.items()})
        window = Window()
    if errors:
        raise ValidationError(errors)
    return ApprovalFilters(
        statuses=statuses,
        triggered_by_user_id=triggered_id,
        window=window,
        oldest_first=oldest in TRUE_WORDS,
    )


def _person(user) -> str | None:
    if user is None:
        return None
    return user.display_name


def decided_in_words(approval: ToolApproval) -> str:
    """The log says how a row was decided, in words (seed 003: standing rows say so)."""
    if approval.status == ApprovalStatus.PENDING:
        return "Waiting for a decision"
    if approval.decided_via == DecidedVia.STANDING:
        return f"Approved by standing consent for the conversation, given by {_person(approval.decided_by) or 'a deleted account'}"
    if approval.decided_via == DecidedVia.SWEEP or approval.status == ApprovalStatus.EXPIRED:
        return "Expired: nobody decided in time"
    verb = "Approved" if approval.status == ApprovalStatus.APPROVED else "Rejected"
    return f"{verb} by {_person(approval.decided_by) or 'a deleted account'}"


def approval_row(approval: ToolApproval, *, now=None) -> dict:
    """The read model of one row: the API, the console and the export share it."""
    now = now or timezone.now()
    run = approval.run
    return {
        "id": approval.pk,
        "run_id": approval.run_id,
        "agent_id": approval.agent_id,
        "agent_name": approval.agent.name,
        "delegate_name": approval.delegate_name or None,
        "tool_name": approval.tool_name,
        "tool_id": approval.tool_id,
        "capability_id": approval.capability_id,
        "arguments": approval.arguments,
        "status": approval.status,
        "decided_via": approval.decided_via or None,
        "decided_in_words": decided_in_words(approval),
        "triggered_by_user_id": run.user_id,
        "triggered_by_email": run.user.email if run.user is not None else None,
        "decided_by_user_id": approval.decided_by_id,
        "decided_by_name": _person(approval.decided_by),
        "decided_by_email": approval.decided_by.email if approval.decided_by is not None else None,
        "note": approval.note,
        "result": approval.result or None,
        "created_at": approval.created_at,
        "decided_at": approval.decided_at,
        "age_seconds": int((now - approval.created_at).total_seconds())
        if approval.status == ApprovalStatus.PENDING
        else None,
    }


def oldest_pending_age_seconds(user, organization) -> int | None:
    """The age of the oldest wait (seed 003: the queue shows it)."""
    oldest = (
        approvals_visible_to(user, organization)
        .filter(status=ApprovalStatus.PENDING)
        .aggregate(oldest=Min("created_at"))["oldest"]
    )
    return int((timezone.now() - oldest).total_seconds()) if oldest else None


def parked_calls(run) -> list[ToolApproval]:
    """The run's calls waiting for a decision (the caller checks the run is parked on them)."""
    return list(
        ToolApproval.objects.filter(run=run, status=ApprovalStatus.PENDING)
        .select_related("agent", "run", "run__user", "decided_by")
        .order_by("created_at", "pk")
    )


def run_questions(run, *, pending_only: bool = True) -> list[Question]:
    questions = Question.objects.filter(run=run)
    if pending_only:
        questions = questions.filter(status=QuestionStatus.PENDING)
    return list(questions.order_by("created_at", "pk"))


def question_row(question: Question) -> dict:
    return {
        "id": question.pk,
        "run_id": question.run_id,
        "tool_call_id": question.tool_call_id,
        "asked_user_id": question.asked_user_id,
        "questions": question.questions,
        "status": question.status,
        "answers": question.answers,
        "created_at": question.created_at,
        "answered_at": question.answered_at,
    }
