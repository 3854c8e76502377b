"""The gate and parking: what waits for a person, what is refused, and what a parked run records."""

import pytest

from apps.approvals.models import ToolApproval
from apps.runs.events import frames_after
from apps.runs.models import Message, Run, RunStep
from apps.runs.runner import prepare
from apps.runs.services import run_claim_running, run_create
from tests.runs.factories import published_agent

from .factories import ADD_ONE, ADD_TWO, gated_agent, run_now


@pytest.mark.django_db
def test_two_gated_calls_in_one_step_park_the_run_with_a_row_each(org, member):
    run = run_now(member, org, gated_agent(org), ADD_TWO)

    assert run.status == "awaiting_approval"
    assert run.ended_at is None
    rows = list(ToolApproval.objects.filter(run=run).order_by("pk"))
    assert [(r.tool_name, r.tool_id, r.arguments, r.status) for r in rows] == [
        ("add_task", "add_task", {"content": "Email the customer"}, "pending"),
        ("add_task", "add_task", {"content": "Email the account manager"}, "pending"),
    ]
    assert run.paused_state["parked"] == [
        {"kind": "approval", "tool_call_id": rows[0].tool_call_id, "approval_id": rows[0].pk},
        {"kind": "approval", "tool_call_id": rows[1].tool_call_id, "approval_id": rows[1].pk},
    ]
    assert run.paused_state["messages"] == run.transcript
    assert run.paused_state["delegates"] == []


@pytest.mark.django_db
def test_the_transcript_shows_the_parked_step_as_awaiting_approval(org, member):
    run = run_now(member, org, gated_agent(org), ADD_ONE)

    tool_steps = RunStep.objects.filter(run=run, kind="tool_call")
    assert [s.detail["status"] for s in tool_steps] == ["awaiting_approval"]
    assert tool_steps[0].detail["args"] == {"content": "Email the customer"}
    turn = Message.objects.get(run=run, role="assistant")
    assert turn.run_status == "awaiting_approval"
    frames = frames_after(run.pk)
    approval_frames = [f for f in frames if f["type"] == "tool_approval_required"]
    assert len(approval_frames) == 1 and approval_frames[0]["tool_name"] == "add_task"
    assert frames[-1]["type"] == "run_finished" and frames[-1]["status"] == "awaiting_approval"


@pytest.mark.django_db
def test_an_ungated_tool_runs_without_asking(org, member):
    agent = gated_agent(org, tools=("write_plan",))
    run = run_now(member, org, agent, ADD_ONE)
    assert run.status == "completed"
    assert not ToolApproval.objects.filter(run=run).exists()


@pytest.mark.django_db
@pytest.mark.parametrize("surface", ["schedule", "webhook", "embed"])
def test_a_surface_with_nobody_to_ask_gets_a_refusal_the_model_relays(org, member, surface):
    run = run_now(member, org, gated_agent(org), ADD_ONE, surface=surface)

    assert run.status == "completed"
    assert not ToolApproval.objects.filter(run=run).exists()
    assert "needs a person's approval, and nobody can approve it here" in run.output
    assert f"the run came from {surface}" in run.output


@pytest.mark.django_db
@pytest.mark.parametrize("surface", ["slack", "telegram", "mattermost"])
def test_a_chat_channel_parks_a_gated_call_for_the_queue(org, member, surface):
    # A channel's thread announces the parked call with a link to the queue (apps.channels);
    # nothing in the thread decides it.
    run = run_now(member, org, gated_agent(org), ADD_ONE, surface=surface)

    assert run.status == "awaiting_approval"
    assert ToolApproval.objects.get(run=run).status == "pending"


@pytest.mark.django_db
def test_a_parked_run_keeps_what_it_spent(org, member):
    run = run_now(member, org, gated_agent(org), ADD_ONE)
    assert run.request_count == 1 and run.cost_usd > 0


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("capabilities", "mode", "has_work"),
    [
        ([], "follow", False),  # nothing the spec gates: the gate is left out of the agent
        ([{"id": "planning"}], "follow", False),  # planning's tools act on nothing: none gated
        ([{"id": "planning", "tool_approval": {"add_task": "required"}}], "follow", True),
        ([{"id": "planning"}], "ask_all", True),  # every call is held
        ([{"id": "ask_user"}], "follow", True),  # the question tool comes from the gate
    ],
)
def test_the_gate_joins_the_run_only_when_it_has_something_to_hold(
    org, member, capabilities, mode, has_work
):
    agent = published_agent(org, capabilities=capabilities)
    run = run_create(
        actor=member, organization=org, agent=agent, input="hi", surface="chat", approval_mode=mode
    )
    assert run_claim_running(run.pk)

    prepared = prepare(Run.objects.get(pk=run.pk))

    assert prepared.approval_gate.has_work() is has_work
    joined = prepared.approval_gate in prepared.agent.root_capability.capabilities
    assert joined is has_work
