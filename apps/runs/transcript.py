"""A conversation as the chat draws it, read back from what the runs stored.

The chat must look the same after a reload as it did live (issue 15): one assistant turn per run
however many times it parked, its tool calls and results in the order they happened, the cards it
raised (approvals and questions) where they were raised — decided ones resolved, with the
decision — its charts, and its state in words. Live, the page builds the same blocks from the
run's frames and, when a run ends, swaps its turn for this rendering
(``runs:chat-turn``), so the two cannot drift apart.

Only reads: the messages of the conversation, each run's stored transcript (pydantic-ai messages,
which start with the history the run was given), its approvals and its questions.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from decimal import Decimal

from pydantic_ai.messages import (
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)

from apps.approvals import selectors as approval_selectors
from apps.approvals.choices import ApprovalStatus, QuestionStatus
from apps.approvals.models import Question, ToolApproval
from apps.capabilities.tools.chart_svg import render_chart_svg
from apps.capabilities.tools.charts import chart_artifact
from apps.capabilities.tools.sources import sources_of
from apps.spend.models import EntryKind, LedgerEntry

from . import hooks, selectors
from .choices import TERMINAL_STATUSES, RunStatus, StepKind
from .media import is_prompt, restored_transcript
from .models import Conversation, Run, RunStep

ASK_TOOL_NAME = "ask_user_question"


def chat_turns(conversation: Conversation) -> list[dict]:
    """The conversation's turns in order: each person's message, then one turn per run."""
    turns: list[dict] = []
    by_run: dict[int, dict] = {}
    for turn in selectors.turns_with_gauge(
        selectors.conversation_turns(conversation), conversation.agent
    ):
        run_id = turn["run_id"]
        if turn["role"] == "assistant" and run_id:
            earlier = by_run.get(run_id)
            if earlier is not None:
                # A run that parked wrote a turn at each stop: they are one answer. Each carries
                # its own share of the run's cost, so the shares add up to the run's.
                _merge_segment(earlier, turn)
                continue
            by_run[run_id] = turn
        turns.append(turn)
    _attach_runs(by_run)
    _attach_own_thumbs(turns, conversation.user_id)
    return turns


def _attach_own_thumbs(turns: list[dict], user_id: int | None) -> None:
    """The thread's owner's thumb on each assistant turn, in one query (a chat is its owner's,
    so the owner is the reader). apps.ratings sits above runs and provides its table (hooks)."""
    ids = [turn["id"] for turn in turns if turn["role"] == "assistant"]
    mine: dict[int, str] = {}
    if ids and user_id is not None:
        mine = dict(
            hooks.message_ratings()
            .filter(message_id__in=ids, user_id=user_id)
            .values_list("message_id", "thumb")
        )
    for turn in turns:
        turn["my_rating"] = mine.get(turn["id"], "")


def run_turn(conversation: Conversation, run_id: int) -> dict | None:
    """One run's assistant turn, as ``chat_turns`` draws it (the live page's swap)."""
    for turn in chat_turns(conversation):
        if turn["role"] == "assistant" and turn["run_id"] == run_id:
            return turn
    return None


def run_trace(run: Run) -> list[dict]:
    """A run's blocks in order (what the chat draws for it), for the run's detail in Activity."""
    approvals = {
        a.tool_call_id: a
        for a in ToolApproval.objects.filter(run=run)
        .select_related("agent", "run", "run__user", "decided_by")
        .order_by("created_at", "pk")
    }
    questions = {
        q.tool_call_id: q for q in Question.objects.filter(run=run).order_by("created_at", "pk")
    }
    return _blocks(run, run.output, approvals, questions)


def step_timeline(run: Run, steps) -> list[dict]:
    """The run's steps with when each model request was booked, in seconds after the run
    started (its ledger entry's time: the request's response had arrived and been priced). Steps
    are written when the run ends and carry no time of their own; the ledger books each request
    as it happens, in order, so the n-th model request step is the n-th request entry."""
    booked = list(
        LedgerEntry.objects.filter(ledger__run_id=run.pk, kind=EntryKind.MODEL_REQUEST)
        .order_by("created_at", "pk")
        .values_list("created_at", flat=True)
    )
    start = run.started_at
    end = run.ended_at or (booked[-1] if booked else None)
    total = (end - start).total_seconds() if start and end else None
    rows, index = [], 0
    for step in steps:
        row = {"step": step, "at_s": None, "total_s": total}
        if step.kind == StepKind.MODEL_REQUEST and start and index < len(booked):
            row["at_s"] = max(0.0, (booked[index] - start).total_seconds())
            index += 1
        rows.append(row)
    return rows


def _merge_segment(turn: dict, later: dict) -> None:
    if turn["run_status"] in TERMINAL_STATUSES:
        # A turn written after the run's own end is a background delegation that settled after
        # the answer (apps/runs/delegation.py ``book_late``): it adds to the answer.
        turn.setdefault("notices", []).append(later["content"])
    else:
        turn["content"] = later["content"] or turn["content"]
    if later["cost_usd"] is not None:
        turn["cost_usd"] = (turn["cost_usd"] or Decimal("0")) + later["cost_usd"]
    turn["cost_is_partial"] = bool(turn["cost_is_partial"] or later["cost_is_partial"])
    turn["context"] = later["context"] or turn["context"]
    turn["run_status"] = later["run_status"]


def _attach_runs(by_run: dict[int, dict]) -> None:
    if not by_run:
        return
    runs = Run.objects.filter(pk__in=by_run).only(
        "pk",
        "status",
        "error",
        "input",
        "transcript",
        "model_provider",
        "conversation_id",
        "organization",
    )
    approvals: defaultdict[int, dict[str, ToolApproval]] = defaultdict(dict)
    for approval in (
        ToolApproval.objects.filter(run_id__in=by_run)
        .select_related("agent", "run", "run__user", "decided_by")
        .order_by("created_at", "pk")
    ):
        approvals[approval.run_id][approval.tool_call_id] = approval
    questions: defaultdict[int, dict[str, Question]] = defaultdict(dict)
    for question in Question.objects.filter(run_id__in=by_run).order_by("created_at", "pk"):
        questions[question.run_id][question.tool_call_id] = question
    # What each run delegated to published agents: a closed panel per delegated row.
    delegations = defaultdict(list)
    for child in (
        Run.objects.filter(parent_run_id__in=by_run)
        .select_related("agent")
        .only(
            "pk",
            "parent_run_id",
            "subagent_task_id",
            "status",
            "error",
            "cost_usd",
            "cost_is_partial",
            "agent__name",
            "started_at",
        )
        .order_by("started_at", "pk")
    ):
        delegations[child.parent_run_id].append(child)
    # A compaction setting that could not work, said once per run: booked on a request's step.
    skipped = {
        run_id: detail["compaction_skipped"]
        for run_id, detail in RunStep.objects.filter(
            run_id__in=by_run, detail__has_key="compaction_skipped"
        ).values_list("run_id", "detail")
    }
    for run in runs:
        turn = by_run[run.pk]
        if run.pk in skipped:
            turn["compaction_notice"] = compaction_skipped_sentence(skipped[run.pk])
        turn["run_status"] = run.status
        turn["status_label"] = RunStatus(run.status).label
        turn["simulated"] = run.model_provider == "offline"
        if run.error and run.status != RunStatus.COMPLETED:
            turn["error"] = run.error
        turn["blocks"] = _blocks(run, turn["content"], approvals[run.pk], questions[run.pk])
        # Background delegations that settled after the answer, drawn after it.
        turn["blocks"].extend({"kind": "text", "text": n} for n in turn.pop("notices", []))
        turn["delegations"] = delegations[run.pk]
        turn["has_pending_card"] = any(
            b["kind"] in ("approval", "question") and b["pending"] for b in turn["blocks"]
        )


def compaction_skipped_sentence(notice: dict) -> str:
    """What the chat says of a compaction setting that cannot work (static/runs/chat.js says the
    same live): the overhead and the window it was measured against, the pair someone needs to
    pick a number that works."""
    return (
        "Compaction is skipped: the instructions and tool schemas alone are about "
        f"{notice.get('overhead_tokens')} tokens, above its trigger of "
        f"{notice.get('trigger_tokens')} tokens (a {notice.get('window_tokens')}-token window). "
        "A larger context_window or a higher max_fraction would let it work."
    )


def _own_messages(run: Run) -> list:
    """The messages this run added: its transcript starts with the conversation's history, and
    this run's part begins at the request carrying its own input (the last one that does).

    Found on the stored JSON before anything is parsed: a long conversation's later runs carry
    every earlier turn, and only their own tail is drawn."""
    stored = run.transcript or []
    start = None
    for index, message in enumerate(stored):
        if message.get("kind") == "request" and any(
            is_prompt(part, run.input) for part in message.get("parts") or []
        ):
            start = index
    if not stored:
        return []
    own = restored_transcript(
        stored[start or 0 :],
        organization_id=run.organization_id,
        conversation_id=run.conversation_id,
    )
    return ModelMessagesTypeAdapter.validate_python(own)


class _Blocks:
    """Consecutive tool lines share one list; consecutive text shares one block."""

    def __init__(self) -> None:
        self.items: list[dict] = []
        self.seen_calls: set[str] = set()

    def text(self, content: str) -> None:
        if not content:
            return
        if self.items and self.items[-1]["kind"] == "text":
            self.items[-1]["text"] += content
        else:
            self.items.append({"kind": "text", "text": content})

    def line(self, line: dict) -> None:
        if self.items and self.items[-1]["kind"] == "tools":
            self.items[-1]["lines"].append(line)
        else:
            self.items.append({"kind": "tools", "lines": [line]})

    def add(self, block: dict) -> None:
        self.items.append(block)


def _blocks(run: Run, content: str, approvals: dict, questions: dict) -> list[dict]:
    blocks = _Blocks()
    for message in _own_messages(run):
        if isinstance(message, ModelResponse):
            cards = []
            for part in message.parts:
                if isinstance(part, TextPart):
                    blocks.text(part.content)
                elif isinstance(part, ToolCallPart):
                    if part.tool_call_id in blocks.seen_calls:
                        continue
                    blocks.seen_calls.add(part.tool_call_id)
                    blocks.line(
                        {
                            "kind": "call",
                            "tool_call_id": part.tool_call_id,
                            "tool_name": part.tool_name,
                            "args": part.args_as_json_str(),
                        }
                    )
                    if part.tool_call_id in approvals:
                        cards.append(_approval_block(approvals.pop(part.tool_call_id)))
                    if part.tool_call_id in questions:
                        cards.append(_question_block(questions.pop(part.tool_call_id)))
            for card in cards:
                blocks.add(card)
        elif isinstance(message, ModelRequest):
            for request_part in message.parts:
                if (
                    isinstance(request_part, ToolReturnPart | RetryPromptPart)
                    and request_part.tool_name
                ):
                    result = (
                        request_part.model_response()
                        if isinstance(request_part, RetryPromptPart)
                        else request_part.model_response_str()
                    )
                    blocks.line(
                        {
                            "kind": "result",
                            "tool_call_id": request_part.tool_call_id,
                            "tool_name": request_part.tool_name,
                            "content": result,
                            "pretty": _pretty(result),
                            "checklist": _checklist(result),
                        }
                    )
                    metadata = getattr(request_part, "metadata", None)
                    chart = chart_artifact(metadata)
                    if chart is not None:
                        blocks.add(
                            {
                                "kind": "chart",
                                "tool_call_id": request_part.tool_call_id,
                                "svg": render_chart_svg(chart),
                            }
                        )
                    sources = sources_of(metadata)
                    if sources:
                        # The page web_fetch read or the results web_search found, as the
                        # source cards the live frame drew.
                        blocks.add(
                            {
                                "kind": "sources",
                                "tool_call_id": request_part.tool_call_id,
                                "sources": sources,
                            }
                        )
    # Cards whose call the transcript does not show (a run that stopped before storing it).
    for approval in approvals.values():
        blocks.add(_approval_block(approval))
    for question in questions.values():
        blocks.add(_question_block(question))
    if not any(b["kind"] == "text" for b in blocks.items) and content:
        blocks.text(content)
    return blocks.items


# A plan as the planning tools print it: "1. [x] [a1b2] Email the customer (completed)".
_PLAN_LINE = re.compile(
    r"^\s*\d+\.\s+\[(?P<mark>[ x~!-])\]\s+(?:\[[^\]]+\]\s+)?(?P<text>.+?)(?:\s+\((?P<state>[a-z_]+)\))?(?:\s+—.*)?$"
)
_PLAN_MARKS = {"x": "done", "~": "doing", "-": "dropped", "!": "blocked", " ": "todo"}


def _checklist(result: str) -> list[dict] | None:
    """A plan result as checklist items; None when the result is not a plan."""
    items = []
    for line in result.splitlines():
        match = _PLAN_LINE.match(line)
        if match:
            items.append({"state": _PLAN_MARKS[match["mark"]], "text": match["text"]})
    return items or None


def _pretty(result: str) -> str | None:
    """A JSON result pretty-printed, multi-line output as a code block; one line stays a line."""
    stripped = result.strip()
    if stripped[:1] in "[{":
        try:
            return json.dumps(json.loads(stripped), indent=2, ensure_ascii=False)
        except ValueError:
            pass
    if "\n" in stripped:
        return stripped
    return None


def _approval_block(approval: ToolApproval) -> dict:
    row = approval_selectors.approval_row(approval)
    row["arguments_json"] = json.dumps(approval.arguments, indent=2, ensure_ascii=False)
    row["tool_call_id"] = approval.tool_call_id
    return {
        "kind": "approval",
        "call": row,
        "pending": approval.status == ApprovalStatus.PENDING,
        "resolved_text": _decision_sentence(row),
    }


def _decision_sentence(row: dict) -> str:
    words = row["decided_in_words"]
    return f"{words}: “{row['note']}”" if row["note"] else f"{words}."


def _question_block(question: Question) -> dict:
    return {
        "kind": "question",
        "card": approval_selectors.question_row(question),
        "pending": question.status == QuestionStatus.PENDING,
        "resolved_text": _answer_sentence(question),
    }


def _answer_sentence(question: Question) -> str:
    if question.status == QuestionStatus.ANSWERED:
        answer = _answer_words(question.answers)
        return f"Answered: {answer}" if answer else "Answered."
    return QuestionStatus(question.status).label + "."


def _answer_words(value) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        return "; ".join(filter(None, (_answer_words(v) for v in value.values())))
    if isinstance(value, list | tuple):
        return ", ".join(filter(None, (_answer_words(v) for v in value)))
    return str(value)
