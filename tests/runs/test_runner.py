"""The runner in process (no worker): outcomes, step limits, the offline contract, turn costs."""

from decimal import Decimal

import pytest
from pydantic_ai.messages import ModelMessagesTypeAdapter, ModelRequest, UserPromptPart

from apps.agents.models import ModelProfile
from apps.runs.events import frames_after
from apps.runs.models import Message, Run
from apps.runs.runner import execute_run
from apps.spend.models import Ledger

from .factories import published_agent, queued_run


def run_now(actor, org, agent, text, **kwargs) -> Run:
    run = queued_run(actor, org, agent, text, **kwargs)
    execute_run(run.pk)
    return Run.objects.get(pk=run.pk)


@pytest.mark.django_db
def test_an_organization_without_a_model_profile_gets_the_offline_default(org, member):
    assert not ModelProfile.objects.filter(organization=org).exists()
    run = run_now(member, org, published_agent(org), "hello there")

    profile = ModelProfile.objects.get(organization=org)
    assert profile.is_default and profile.provider == "offline"
    assert run.status == "completed"
    assert run.output == 'You said "hello there" (2 words). This is the offline model answering.'


@pytest.mark.django_db
def test_the_offline_model_is_deterministic(org, member):
    agent = published_agent(org)
    first = run_now(member, org, agent, "the same words")
    second = run_now(member, org, agent, "the same words")
    assert (first.output, first.input_tokens, first.output_tokens, first.cost_usd) == (
        second.output,
        second.input_tokens,
        second.output_tokens,
        second.cost_usd,
    )


@pytest.mark.django_db
def test_the_offline_model_without_a_clock_says_it_cannot_tell_the_time(org, member):
    run = run_now(member, org, published_agent(org), "What time is it?")
    assert run.output == "I have no clock, so I cannot tell the date or time."


@pytest.mark.django_db
def test_the_offline_model_reads_the_time_from_the_clock_instructions(org, member):
    agent = published_agent(org, instructions="Current date and time: 2031-05-06 10:00 (UTC)")
    run = run_now(member, org, agent, "what is the date today?")
    assert run.output == "According to my clock: Current date and time: 2031-05-06 10:00 (UTC)"


@pytest.mark.django_db
def test_a_call_of_an_unknown_tool_is_answered_not_crashed(org, member):
    run = run_now(member, org, published_agent(org), '/call launch_rockets {"count": 3}')
    assert run.status == "completed"
    assert run.output == "I have no tool called launch_rockets."


@pytest.mark.django_db
def test_ask_without_the_ask_user_capability_says_so(org, member):
    run = run_now(member, org, published_agent(org), "/ask which colour?")
    assert run.output == "I cannot ask you anything here: this agent has no ask_user_question tool."


@pytest.mark.django_db
def test_steps_within_the_limit_complete_with_one_request_per_step_plus_the_answer(org, member):
    agent = published_agent(org, limits={"max_steps": 3})
    run = run_now(member, org, agent, "/steps 2")
    assert run.status == "completed"
    assert run.output == "Done after 2 steps."
    assert run.request_count == 3
    assert run.steps.count() == 3


@pytest.mark.django_db
def test_steps_use_a_harmless_tool_of_the_agent_when_it_has_one(org, member, echo_toolset):
    agent = published_agent(org, capabilities=[{"id": echo_toolset}])
    run = run_now(member, org, agent, "/steps 2")
    assert run.status == "completed"
    assert [step.detail["tool_calls"] for step in run.steps.all()] == [["ping"], ["ping"], []]


@pytest.mark.django_db
def test_max_steps_stops_the_run_with_a_clear_outcome_and_its_spend_recorded(org, member):
    agent = published_agent(org, limits={"max_steps": 3})
    run = run_now(member, org, agent, "/steps 5")

    assert run.status == "failed"
    assert run.stop_reason == "step_limit"
    assert (
        run.error
        == "The run stopped at its step limit of 3 model requests (limits.max_steps) before answering."
    )
    assert run.request_count == 3
    assert run.cost_usd > 0 and run.cost_usd == Ledger.objects.get(run=run).cost_usd
    assert run.ended_at is not None
    assert len(run.transcript) >= 6  # the three requests and responses are kept


@pytest.mark.django_db
def test_a_conversation_continues_with_its_history_and_its_turns_sum_to_their_runs(org, member):
    agent = published_agent(org)
    first = run_now(member, org, agent, "first message")
    second = run_now(member, org, agent, "second message", conversation=first.conversation)

    assert second.conversation_id == first.conversation_id
    history = ModelMessagesTypeAdapter.validate_python(second.transcript)
    prompts = [
        p.content
        for m in history
        if isinstance(m, ModelRequest)
        for p in m.parts
        if isinstance(p, UserPromptPart)
    ]
    assert prompts == ["first message", "second message"]
    turns = Message.objects.filter(conversation=first.conversation).order_by("created_at", "pk")
    assert [t.role for t in turns] == ["user", "assistant", "user", "assistant"]
    assert (
        sum(t.cost_usd for t in turns if t.role == "assistant") == first.cost_usd + second.cost_usd
    )


@pytest.mark.django_db
def test_a_resumed_run_writes_a_second_turn_holding_only_its_own_share(org, member):
    agent = published_agent(org)
    run = run_now(member, org, agent, "before parking")
    first_cost = run.cost_usd
    # Park it as an approval would, then resume it.
    Run.objects.filter(pk=run.pk).update(status="awaiting_approval")
    history = ModelMessagesTypeAdapter.validate_python(run.transcript)
    history.append(ModelRequest(parts=[UserPromptPart("after the approval")]))
    Run.objects.filter(pk=run.pk).update(
        transcript=ModelMessagesTypeAdapter.dump_python(history, mode="json")
    )

    execute_run(run.pk, resume=True)

    run.refresh_from_db()
    assert run.status == "completed"
    assert run.request_count == 2
    turns = list(Message.objects.filter(run=run, role="assistant").order_by("pk"))
    assert len(turns) == 2
    assert turns[0].cost_usd == first_cost
    assert turns[1].cost_usd == run.cost_usd - first_cost
    assert sum(t.cost_usd for t in turns) == run.cost_usd


@pytest.mark.django_db
def test_an_archived_agent_fails_the_run_with_a_sentence(org, member):
    agent = published_agent(org)
    run = queued_run(member, org, agent, "hi")
    agent.status = "archived"
    agent.save(update_fields=["status"])

    execute_run(run.pk)

    run.refresh_from_db()
    assert (run.status, run.stop_reason, run.error) == (
        "failed",
        "not_runnable",
        "The agent is archived.",
    )
    assert run.cost_usd == Decimal("0")


@pytest.mark.django_db
def test_a_cancelled_queued_run_is_never_executed(org, member):
    run = queued_run(member, org, published_agent(org), "hi")
    from apps.runs.services import run_cancel

    run_cancel(actor=member, run=run)
    assert execute_run(run.pk) is None
    run.refresh_from_db()
    assert run.status == "cancelled" and run.request_count == 0


def test_a_runs_frames_hold_every_requests_cost_in_order_before_the_end(org, member):
    run = queued_run(member, org, published_agent(org), text="/steps 2")
    execute_run(run.pk)

    frames = frames_after(run.pk)
    assert [frame["seq"] for frame in frames] == list(range(1, len(frames) + 1))
    kinds = [frame["type"] for frame in frames]
    assert kinds[0] == "run_started" and kinds[-1] == "run_finished"
    # The cost and context gauge of each of the 3 requests (held to ride with the next write)
    # are all written, in request order, before the terminal frame.
    costs = [frame for frame in frames if frame["type"] == "cost"]
    assert [frame["request"] for frame in costs] == [1, 2, 3]
    assert kinds.count("context_usage") == 3
    assert kinds.count("tool_call") == kinds.count("tool_result") == 2
    assert sum(Decimal(frame["cost_usd"]) for frame in costs) == Run.objects.get(pk=run.pk).cost_usd


def _assert_typed(frames) -> None:
    """Every frame has only keys its definition in apps/runs/events.py declares, and all it
    requires."""
    from typing import get_type_hints

    from apps.runs import events

    typed = {
        "run_started": events.RunStartedFrame,
        "text_delta": events.TextDeltaFrame,
        "thinking_delta": events.ThinkingDeltaFrame,
        "tool_call": events.ToolCallFrame,
        "tool_result": events.ToolResultFrame,
        "tool_approval_required": events.ToolApprovalRequiredFrame,
        "question": events.QuestionFrame,
        "cost": events.CostFrame,
        "context_usage": events.ContextUsageFrame,
        "compaction": events.CompactionFrame,
        "run_finished": events.RunFinishedFrame,
    }
    for frame in frames:
        definition = typed[frame["type"]]
        declared = set(get_type_hints(definition)) | {"seq", "run_id"}
        assert set(frame) <= declared, (frame["type"], set(frame) - declared)
        assert definition.__required_keys__ <= set(frame), (
            frame["type"],
            definition.__required_keys__ - set(frame),
        )


@pytest.mark.django_db
def test_every_frame_a_run_sends_matches_its_typed_definition(org, member, echo_toolset):
    """apps/runs/events.py defines each frame the runner sends; a frame with a key its type does
    not declare, or without one it requires, is a contract change clients would discover first."""
    agent = published_agent(org, capabilities=[{"id": echo_toolset}])
    run = run_now(member, org, agent, '/call echo {"text": "one"}')

    frames = frames_after(run.pk)
    assert {frame["type"] for frame in frames} >= {
        "run_started",
        "tool_call",
        "tool_result",
        "cost",
        "run_finished",
    }
    _assert_typed(frames)


@pytest.mark.django_db
def test_the_frames_a_parked_run_sends_match_their_typed_definitions(org, owner):
    from tests.approvals.factories import ADD_ONE, gated_agent
    from tests.approvals.factories import run_now as run_on_surface

    parked = run_on_surface(owner, org, gated_agent(org), ADD_ONE, surface="chat")
    asker = published_agent(org, name="Asker", capabilities=[{"id": "ask_user"}])
    asked = run_on_surface(owner, org, asker, "/ask Shall I send it?", surface="chat")
    assert (parked.status, asked.status) == ("awaiting_approval", "awaiting_answer")

    frames = frames_after(parked.pk) + frames_after(asked.pk)
    assert {frame["type"] for frame in frames} >= {"tool_approval_required", "question"}
    _assert_typed(frames)
