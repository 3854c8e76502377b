"""What happens to a run that stops with calls waiting on a person, and when it comes back.

The run's side of a wait, owned by the runs app like every other Run write: the approval and
question rows themselves are opened through ``apps.approvals.services`` (approvals sits below
runs and never writes a Run row; it tells runs about decisions through its hooks).

The runner calls :func:`after_run` inside the transaction that books the run's end, so the run's
status, its approval rows, its question cards and its parked steps commit together:

- a run that ended with ``DeferredToolRequests`` parks: one ``ToolApproval`` row per gated call
  (two gated calls in one model step → two rows, written now and not as each call was gated,
  seed 003 #169), one ``Question`` per ``ask_user_question`` call, a ``tool_call`` step per parked
  call reading ``awaiting_approval`` / ``awaiting_answer`` (so reopening the conversation shows the
  wait), and ``paused_state``;
- a resumed run settles its parked steps with what each call returned (the approved call's own
  result lands on the approved step, not as a new step);
- an approve-everything session's waived calls are written as standing rows.

``paused_state`` is a tree, one level per agent, so a delegate that parks can later continue in
place: ``{"agent_id", "messages", "history_length", "parked": [{"tool_call_id", "kind", ...}],
"delegates": [<same shape>], "plan"}``. The top level's ``messages`` equal the run's transcript
at the moment it parked.
"""

from __future__ import annotations

import dataclasses

from pydantic_ai.messages import (
    ModelMessagesTypeAdapter,
    ModelRequest,
    ToolCallPart,
    ToolReturnPart,
)

from apps.approvals import services as approvals
from apps.approvals.gate import ASK_TOOL_NAME

from . import hooks
from .choices import PARKED_STATUSES, RunStatus, StepKind
from .delegation.parked import leaf_id, only_questions, park_nodes
from .events import Frame, QuestionFrame, ToolApprovalRequiredFrame
from .models import Run, RunStep

STEP_AWAITING_APPROVAL = "awaiting_approval"
STEP_AWAITING_ANSWER = "awaiting_answer"
STEP_SETTLED = "settled"
STEP_EXPIRED = "expired"


def parked_status(deferred, runtime=None) -> str:
    """The status a run parks in: approval first, since a decision also blocks any answer. A
    ``task`` call parked only because its delegation asked the person a question is an answer
    to wait for, not a decision."""
    nodes = park_nodes(runtime)
    own = [call for call in deferred.approvals if call.tool_call_id not in nodes]
    if own:
        return RunStatus.AWAITING_APPROVAL
    parked_nodes = [nodes[c.tool_call_id] for c in deferred.approvals if c.tool_call_id in nodes]
    if parked_nodes and not only_questions(parked_nodes):
        return RunStatus.AWAITING_APPROVAL
    return RunStatus.AWAITING_ANSWER


def _args(call: ToolCallPart) -> dict:
    try:
        return call.args_as_dict()
    except Exception:  # arguments the model streamed as broken JSON: shown as text, still decidable
        return {"_raw": call.args_as_json_str()}


def _questions_of(call: ToolCallPart) -> list[dict]:
    from pydantic_ai_harness.ask_user import AskUserRequest

    request = AskUserRequest.from_tool_call(call)
    return [question.model_dump(mode="json") for question in request.questions]


def _next_step_number(run_id: int) -> int:
    return RunStep.objects.filter(run_id=run_id).count() + 1


def _plan_of(prepared) -> list | None:
    plan = prepared.resources.plan if prepared is not None else None
    if plan is None:
        return None
    from apps.capabilities.tools.planning import plan_json

    return plan_json(plan.items)


def _park_delegation(run: Run, node: dict, number: int, frames: list[Frame]) -> int:
    """A delegation that parked on gated calls of its own (and of delegations under it): one
    approval row per call, each naming the delegate that proposed it and its arguments."""
    who = {"name": node["name"], "task_id": node["task_id"], "agent_id": node.get("agent_id")}
    for leaf in node.get("approvals", []):
        meta = leaf.get("metadata") or {}
        call_id = leaf_id(node["task_id"], leaf["tool_call_id"])
        approval = approvals.approval_open(
            run=run,
            tool_call_id=call_id,
            tool_name=leaf["tool_name"],
            tool_id=meta.get("tool_id", ""),
            capability_id=meta.get("capability_id", ""),
            arguments=leaf["args"],
            delegate_name=node["name"],
            delegate_agent_id=node.get("agent_id"),
        )
        leaf["approval_id"] = approval.pk
        RunStep.objects.create(
            run=run,
            number=number,
            kind=StepKind.TOOL_CALL,
            detail={
                "tool_call_id": call_id,
                "tool_name": leaf["tool_name"],
                "args": approval.arguments,
                "status": STEP_AWAITING_APPROVAL,
                "approval_id": approval.pk,
                "delegate": who,
            },
        )
        number += 1
        frames.append(
            ToolApprovalRequiredFrame(
                type="tool_approval_required",
                approval_id=approval.pk,
                tool_call_id=call_id,
                tool_name=leaf["tool_name"],
                args=approval.arguments,
                delegate=who,
            )
        )
    for asked in node.get("questions", []):
        call_id = leaf_id(node["task_id"], asked["tool_call_id"])
        question = approvals.question_open(run=run, tool_call_id=call_id, questions=asked["call"])
        asked["question_id"] = question.pk
        RunStep.objects.create(
            run=run,
            number=number,
            kind=StepKind.TOOL_CALL,
            detail={
                "tool_call_id": call_id,
                "tool_name": ASK_TOOL_NAME,
                "args": {"questions": question.questions},
                "status": STEP_AWAITING_ANSWER,
                "question_id": question.pk,
                "delegate": {"name": node["name"], "task_id": node["task_id"]},
            },
        )
        number += 1
        frames.append(
            QuestionFrame(
                type="question",
                question_id=question.pk,
                tool_call_id=call_id,
                questions=question.questions,
                delegate=who,
            )
        )
    for child in node.get("delegates", []):
        number = _park_delegation(run, child, number, frames)
    return number


def _park(run: Run, prepared, deferred, messages) -> list[Frame]:
    frames: list[Frame] = []
    number = _next_step_number(run.pk)
    parked: list[dict] = []
    nodes = park_nodes(getattr(prepared, "delegation", None))
    for call in deferred.approvals:
        node = nodes.get(call.tool_call_id)
        if node is not None:
            # The run's task call parked because its delegation did: the queue gets the
            # delegate's own calls, and the node keeps the delegation's place to continue.
            number = _park_delegation(run, node, number, frames)
            parked.append(
                {
                    "kind": "delegation",
                    "tool_call_id": call.tool_call_id,
                    "task_id": node["task_id"],
                }
            )
            continue
        meta = deferred.metadata.get(call.tool_call_id, {}) or {}
        approval = approvals.approval_open(
            run=run,
            tool_call_id=call.tool_call_id,
            tool_name=call.tool_name,
            tool_id=meta.get("tool_id", ""),
            capability_id=meta.get("capability_id", ""),
            arguments=_args(call),
        )
        RunStep.objects.create(
            run=run,
            number=number,
            kind=StepKind.TOOL_CALL,
            detail={
                "tool_call_id": call.tool_call_id,
                "tool_name": call.tool_name,
                "args": approval.arguments,
                "status": STEP_AWAITING_APPROVAL,
                "approval_id": approval.pk,
            },
        )
        number += 1
        parked.append(
            {"kind": "approval", "tool_call_id": call.tool_call_id, "approval_id": approval.pk}
        )
        frames.append(
            ToolApprovalRequiredFrame(
                type="tool_approval_required",
                approval_id=approval.pk,
                tool_call_id=call.tool_call_id,
                tool_name=call.tool_name,
                args=approval.arguments,
                delegate=None,
            )
        )
    for call in deferred.calls:
        if call.tool_name != ASK_TOOL_NAME:
            continue
        question = approvals.question_open(
            run=run, tool_call_id=call.tool_call_id, questions=_questions_of(call)
        )
        RunStep.objects.create(
            run=run,
            number=number,
            kind=StepKind.TOOL_CALL,
            detail={
                "tool_call_id": call.tool_call_id,
                "tool_name": call.tool_name,
                "args": {"questions": question.questions},
                "status": STEP_AWAITING_ANSWER,
                "question_id": question.pk,
            },
        )
        number += 1
        parked.append(
            {"kind": "question", "tool_call_id": call.tool_call_id, "question_id": question.pk}
        )
        frames.append(
            QuestionFrame(
                type="question",
                question_id=question.pk,
                tool_call_id=call.tool_call_id,
                questions=question.questions,
                delegate=None,
            )
        )
    dumped = ModelMessagesTypeAdapter.dump_python(messages or [], mode="json")
    state = {
        "agent_id": run.agent_id,
        "messages": dumped,
        "history_length": len(dumped),
        "parked": parked,
        "delegates": [node for node in nodes.values()],
    }
    runtime = getattr(prepared, "delegation", None)
    if runtime is not None and runtime.root.created:
        # Specialists the model wrote last the whole run, a park included (seed 000, #175).
        state["dynamic_specialists"] = runtime.root.created
    plan = _plan_of(prepared)
    if plan is not None:
        state["plan"] = plan
    # run_finish booked the segment (status awaiting_*, its spend); the wait is not an end, so
    # the parked state is written without an ended_at (run_finish is told it is parking).
    Run.objects.filter(pk=run.pk, status__in=PARKED_STATUSES).update(paused_state=state)
    return frames


def _returns_in(messages) -> dict[str, ToolReturnPart]:
    returns: dict[str, ToolReturnPart] = {}
    for message in messages or []:
        if isinstance(message, ModelRequest):
            for part in message.parts:
                if isinstance(part, ToolReturnPart):
                    returns[part.tool_call_id] = part
    return returns


def _settle(run: Run, messages, delegated: dict[str, str] | None = None) -> None:
    """The parked steps close with what each call returned (seed 003: settled, not new steps);
    ``delegated`` holds what a continued delegate's parked calls returned, by their leaf id."""
    returns: dict = _returns_in(messages)
    returns.update(delegated or {})
    steps = RunStep.objects.filter(
        run_id=run.pk,
        kind=StepKind.TOOL_CALL,
        detail__status__in=[STEP_AWAITING_APPROVAL, STEP_AWAITING_ANSWER],
    )
    for step in steps:
        part = returns.get(step.detail.get("tool_call_id"))
        if part is None:
            continue
        content = part if isinstance(part, str) else part.model_response_str()
        outcome = "success" if isinstance(part, str) else (part.outcome or "success")
        step.detail = {
            **step.detail,
            "status": STEP_SETTLED,
            "outcome": outcome,
            "result": content,
        }
        step.save(update_fields=["detail"])
        if step.detail.get("approval_id"):
            approvals.approval_record_result(approval_id=step.detail["approval_id"], result=content)


def after_run(*, run: Run, prepared, deferred, messages, resumed: bool) -> list[Frame]:
    """Called by the runner in the transaction that books the run's end. Returns frames to send."""
    frames: list[Frame] = []
    gate = getattr(prepared, "approval_gate", None) if prepared is not None else None
    if gate is not None and gate.waived:
        approvals.approvals_record_standing(run=run, waived=gate.waived)
    runtime = getattr(prepared, "delegation", None) if prepared is not None else None
    for task_id, delegate_gate in runtime.gates if runtime is not None else []:
        if delegate_gate.waived:
            # Namespaced like a delegate's parked calls: two agents of a tree number theirs alone.
            waived = [
                dataclasses.replace(call, tool_call_id=leaf_id(task_id, call.tool_call_id))
                for call in delegate_gate.waived
            ]
            approvals.approvals_record_standing(run=run, waived=waived)
    if resumed:
        runtime = getattr(prepared, "delegation", None)
        _settle(run, messages, runtime.settled_returns if runtime is not None else None)
        Run.objects.filter(pk=run.pk).update(paused_state=None)
        run.paused_state = None
    # ``run`` is the row as run_finish read it back after its write, in this transaction.
    if run.status == RunStatus.BUDGET_EXCEEDED and run.budget_refusal:
        hooks.run_budget_refused(run.pk)
    if deferred is not None and run.status in (
        RunStatus.AWAITING_APPROVAL,
        RunStatus.AWAITING_ANSWER,
    ):
        frames = _park(run, prepared, deferred, messages)
        hooks.run_parked(run.pk)
    return frames
