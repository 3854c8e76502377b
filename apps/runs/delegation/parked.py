"""The parked tree: delegations that parked under the run, kept in its paused state, and what
approving or answering them continues."""

from __future__ import annotations

import logging
from typing import Any

from pydantic_ai.tools import DeferredToolResults, ToolApproved, ToolDenied
from pydantic_ai_harness.ask_user import DECLINED

from apps.approvals.models import ApprovalStatus, Question, QuestionStatus, ToolApproval
from apps.approvals.services import denial_message

from .types import DelegationRecord, DelegationRuntime

logger = logging.getLogger(__name__)


# --- parking and resuming ------------------------------------------------------------------------


def only_questions(nodes) -> bool:
    """A parked tree waiting on answers alone (no approval anywhere in it)."""
    nodes = list(nodes)
    return bool(nodes) and not any(n.get("approvals") for n in iter_nodes(nodes))


def park_nodes(runtime: DelegationRuntime | None) -> dict[str, dict]:
    """The delegations that parked directly under the run's own agent, by ``task`` call id."""
    return runtime.root.parked if runtime is not None else {}


def leaf_id(task_id: str, tool_call_id: str) -> str:
    """A delegate's parked call's id on its approval row: namespaced by the delegation, since two
    agents of one tree number their tool calls independently."""
    return f"{task_id}/{tool_call_id}"


def iter_nodes(nodes):
    for node in nodes:
        yield node
        yield from iter_nodes(node.get("delegates", []))


def resume_tree(paused_state: dict | None) -> dict[str, dict]:
    """On resume: the parked tree with each node's decisions attached (from its approval rows),
    keyed by the run's own ``task`` call ids."""

    nodes = list((paused_state or {}).get("delegates", []))
    ids = [
        a["approval_id"]
        for n in iter_nodes(nodes)
        for a in n.get("approvals", [])
        if "approval_id" in a
    ]
    rows = {
        row.pk: row for row in ToolApproval.objects.filter(pk__in=ids).select_related("decided_by")
    }
    asked_ids = [
        q["question_id"]
        for n in iter_nodes(nodes)
        for q in n.get("questions", [])
        if "question_id" in q
    ]
    questions = {q.pk: q for q in Question.objects.filter(pk__in=asked_ids)}
    for node in iter_nodes(nodes):
        decisions: dict[str, ToolApproved | ToolDenied] = {}
        for parked in node.get("approvals", []):
            row = rows.get(parked.get("approval_id"))
            if row is None:
                continue
            if row.status == ApprovalStatus.APPROVED:
                decisions[parked["tool_call_id"]] = ToolApproved(override_args=row.arguments)
            elif row.status in (ApprovalStatus.REJECTED, ApprovalStatus.EXPIRED):
                decisions[parked["tool_call_id"]] = ToolDenied(message=denial_message(row))
        node["decisions"] = decisions
        answers: dict[str, Any] = {}
        for asked in node.get("questions", []):
            question = questions.get(asked.get("question_id"))
            if question is None:
                continue
            if question.status == QuestionStatus.ANSWERED:
                answers[asked["tool_call_id"]] = question.answers
            elif question.status in (QuestionStatus.DECLINED, QuestionStatus.EXPIRED):
                answers[asked["tool_call_id"]] = DECLINED
        node["answers"] = answers
    return {node["task_call_id"]: node for node in nodes}


def with_delegation_approvals(results: DeferredToolResults, paused_state: dict | None):
    """The run's own deferred results, plus an approval of each of its ``task`` calls that parked:
    replayed, each finds its delegation's place and continues it instead of delegating again."""
    for node in (paused_state or {}).get("delegates", []):
        results.approvals[node["task_call_id"]] = ToolApproved()
    return results


def pending_records(paused_state: dict | None) -> list[DelegationRecord]:
    return [DelegationRecord.from_json(r) for r in (paused_state or {}).get("delegation_rows", [])]


# --- booking ---------------------------------------------------------------------------------
