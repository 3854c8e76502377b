"""compaction ("Long conversations") through the real runner on the offline model: long histories
made of large tool results, a window small enough to cross, turns of one conversation."""

from __future__ import annotations

import json

import pytest
from pydantic_ai.messages import (
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)

from apps.capabilities.tools.compaction import RunCompaction, overhead_tokens
from apps.runs.events import frames_after
from apps.runs.models import Conversation, Run
from apps.runs.runner import execute_run, prepare
from apps.spend.models import LedgerEntry
from tests.runs.factories import published_agent, queued_run
from tests.runs.test_runner import _assert_typed

from .scripted import drive_scripted

pytestmark = pytest.mark.django_db

LINE = "abcdefghij"


def call(tool: str, **args) -> str:
    return f"/call {tool} {json.dumps(args)}"


def compacting_agent(org, big_toolset, instructions="You are a test agent.", **config):
    return published_agent(
        org,
        instructions=instructions,
        capabilities=[{"id": big_toolset}, {"id": "compaction", "config": config}],
        limits={"max_steps": 10},
    )


def turn(actor, org, agent, text, conversation) -> Run:
    run = queued_run(actor, org, agent, text, conversation=conversation)
    execute_run(run.pk)
    return Run.objects.get(pk=run.pk)


def conversation_for(org, agent, member) -> Conversation:
    return Conversation.objects.create(organization=org, agent=agent, user=member)


def compaction_frames(run: Run) -> list[dict]:
    return [f for f in frames_after(run.pk) if f["type"] == "compaction"]


def summaries(run: Run) -> int:
    return LedgerEntry.objects.filter(ledger__run_id=run.pk, kind="compaction").count()


def has_summary(run: Run) -> bool:
    messages = ModelMessagesTypeAdapter.validate_python(run.transcript)
    return any(
        type(part).__name__ == "CompactionPart"
        for m in messages
        if isinstance(m, ModelRequest)
        for part in m.parts
    )


# 12,000 characters of tool result: about 3,000 tokens, over a 2,048 × 0.5 trigger.
BIG = call("repeat", text=LINE, times=700)
SMALL_WINDOW = {"context_window": 4096, "max_fraction": 0.5, "keep_messages": 2}


def test_a_long_tool_loop_is_summarized_booked_and_announced(org, member, big_toolset):
    """The history worth compacting is the long tool loop inside one run."""
    agent = compacting_agent(org, big_toolset, **SMALL_WINDOW)
    run = turn(member, org, agent, BIG, conversation_for(org, agent, member))
    assert run.status == "completed", run.error
    assert summaries(run) == 1
    entry = LedgerEntry.objects.get(ledger__run_id=run.pk, kind="compaction")
    assert entry.input_tokens > 0 and entry.output_tokens > 0 and entry.cost_usd > 0
    # The run's cost includes the summary it paid for; the summary is no model request step.
    entries = LedgerEntry.objects.filter(ledger__run_id=run.pk)
    assert run.cost_usd == sum(e.cost_usd for e in entries)
    assert run.request_count == entries.filter(kind="model_request").count() == 2
    started, finished = compaction_frames(run)
    assert (started["phase"], finished["phase"]) == ("started", "finished")
    assert started["strategy"] == "summarize" and started["window_tokens"] == 4096
    assert finished["summary_output_tokens"] == entry.output_tokens
    assert has_summary(run)
    _assert_typed(frames_after(run.pk))


def test_the_next_turn_starts_from_the_kept_summary_and_does_not_pay_for_it_again(
    org, member, big_toolset
):
    """The seed's story: two consecutive turns each paid for a summary of the same five messages.
    Here the second turn after the summary starts from it and buys nothing."""
    agent = compacting_agent(org, big_toolset, **SMALL_WINDOW)
    thread = conversation_for(org, agent, member)
    first = turn(member, org, agent, BIG, thread)
    assert summaries(first) == 1
    # The tool pair was kept by the first summary; this turn summarizes it (new messages only).
    summarized = turn(member, org, agent, "and now?", thread)
    assert summaries(summarized) == 1
    after = turn(member, org, agent, "one more thing", thread)
    assert after.status == "completed"
    assert summaries(after) == 0
    assert compaction_frames(after) == []
    assert has_summary(after)  # carried over: the thread starts from it
    # Only one summary kept.
    messages = ModelMessagesTypeAdapter.validate_python(after.transcript)
    kept = [
        p
        for m in messages
        if isinstance(m, ModelRequest)
        for p in m.parts
        if type(p).__name__ == "CompactionPart"
    ]
    assert len(kept) == 1


def test_a_setting_that_cannot_work_is_skipped_and_said_once_per_run(org, member, big_toolset):
    # Instructions of about 1,500 tokens against a trigger of 4,096 × 0.05 = 204 tokens.
    agent = compacting_agent(
        org,
        big_toolset,
        instructions="Follow the house style. " * 250,
        context_window=4096,
        max_fraction=0.05,
        keep_messages=1,
    )
    run = turn(member, org, agent, "/steps 3", conversation_for(org, agent, member))
    assert run.status == "completed", run.error
    frames = compaction_frames(run)
    assert [f["phase"] for f in frames] == ["skipped"]
    (skipped,) = frames
    assert skipped["window_tokens"] == 4096 and skipped["trigger_tokens"] == 204
    assert skipped["overhead_tokens"] > 1_000
    _assert_typed(frames)
    assert summaries(run) == 0


def test_the_strategies_that_call_no_model_run_whatever_the_window(org, member, big_toolset):
    agent = compacting_agent(
        org,
        big_toolset,
        instructions="Follow the house style. " * 250,
        strategy="clear_tool_results",
        keep_tool_pairs=0,
        context_window=4096,
        max_fraction=0.5,
    )
    thread = conversation_for(org, agent, member)
    turn(member, org, agent, BIG, thread)
    second = turn(member, org, agent, call("echo", text="hi"), thread)
    assert second.status == "completed", second.error
    assert summaries(second) == 0 and compaction_frames(second) == []
    returns = [
        p
        for m in ModelMessagesTypeAdapter.validate_python(second.transcript)
        for p in getattr(m, "parts", [])
        if isinstance(p, ToolReturnPart)
    ]
    assert returns[0].content == "[tool result cleared]"


def test_sliding_window_drops_the_oldest_messages(org, member, big_toolset):
    agent = compacting_agent(
        org,
        big_toolset,
        strategy="sliding_window",
        keep_messages=2,
        **{"context_window": 4096, "max_fraction": 0.5},
    )
    thread = conversation_for(org, agent, member)
    first = turn(member, org, agent, BIG, thread)
    second = turn(member, org, agent, "and now?", thread)
    assert second.status == "completed"
    assert len(second.transcript) < len(first.transcript) + 2
    assert summaries(second) == 0


def test_tiered_clears_tool_results_first_and_pays_for_no_summary_when_that_is_enough(
    org, member, big_toolset
):
    agent = compacting_agent(org, big_toolset, strategy="tiered", keep_tool_pairs=0, **SMALL_WINDOW)
    run = turn(member, org, agent, BIG, conversation_for(org, agent, member))
    assert run.status == "completed", run.error
    assert summaries(run) == 0
    assert [f["phase"] for f in compaction_frames(run)] == ["started", "finished"]
    assert compaction_frames(run)[1]["summary_output_tokens"] == 0
    assert "[tool result cleared]" in run.output


def test_the_window_comes_from_the_binding_then_the_profile_then_the_fallback(
    org, member, big_toolset
):
    agent = compacting_agent(org, big_toolset)
    prepared = prepare(queued_run(member, org, agent, "hi"))
    (compaction,) = [
        c for c in prepared.agent.root_capability.capabilities if isinstance(c, RunCompaction)
    ]
    # The offline profile notes no window; the price registry has no offline model.
    assert compaction.window_for(prepared.model.model) == 200_000
    pinned = compacting_agent(org, big_toolset, context_window=32_000)
    prepared = prepare(queued_run(member, org, pinned, "hi"))
    (compaction,) = [
        c for c in prepared.agent.root_capability.capabilities if isinstance(c, RunCompaction)
    ]
    assert compaction.window_for(prepared.model.model) == 32_000


def test_overhead_is_what_the_provider_counted_beyond_the_messages():
    from pydantic_ai.messages import ModelResponse, TextPart, UserPromptPart
    from pydantic_ai.usage import RequestUsage

    request = ModelRequest(parts=[UserPromptPart("x" * 400)])  # ~100 tokens
    response = ModelResponse(parts=[TextPart("ok")], usage=RequestUsage(input_tokens=1_100))
    assert overhead_tokens([request]) is None
    assert 990 <= overhead_tokens([request, response]) <= 1_000


def test_a_custom_summary_prompt_is_what_the_summarizer_is_told(org, member, big_toolset):
    agent = compacting_agent(
        org, big_toolset, summary_prompt="Condense this thread: {messages}", **SMALL_WINDOW
    )
    told: list[str] = []

    def model(messages, info):
        if not info.function_tools:  # the summarizer: an agent of the harness's, no tools
            told.append(messages[-1].parts[-1].content)
            return ModelResponse(parts=[TextPart("A summary.")])
        if len([m for m in messages if isinstance(m, ModelResponse)]) == 0:
            return ModelResponse(parts=[ToolCallPart("repeat", {"text": LINE, "times": 700})])
        return ModelResponse(parts=[TextPart("done")])

    outcome, _, state = drive_scripted(queued_run(member, org, agent, "go"), function=model)
    assert outcome.status == "completed"
    (prompt,) = told
    assert prompt.startswith("Condense this thread: ")
    kept = [p for m in state.messages if isinstance(m, ModelRequest) for p in m.parts]
    assert any(type(p).__name__ == "CompactionPart" and p.content == "A summary." for p in kept)


def test_the_skipped_notice_is_part_of_the_stored_turn_once(org, member, big_toolset):
    """A reload draws it again: it is booked on the step of the request it preceded."""
    from apps.runs.transcript import chat_turns

    agent = compacting_agent(
        org,
        big_toolset,
        instructions="Follow the house style. " * 250,
        context_window=4096,
        max_fraction=0.05,
        keep_messages=1,
    )
    conversation = conversation_for(org, agent, member)
    run = turn(member, org, agent, "/steps 3", conversation)
    steps = [s.detail for s in run.steps.order_by("number") if "compaction_skipped" in s.detail]
    (notice,) = [detail["compaction_skipped"] for detail in steps]
    (frame,) = compaction_frames(run)
    assert notice == {
        "strategy": "summarize",
        "overhead_tokens": frame["overhead_tokens"],
        "trigger_tokens": 204,
        "window_tokens": 4096,
    }
    # The notice rides on the second request: the first measured the overhead.
    assert [s.number for s in run.steps.order_by("number") if "compaction_skipped" in s.detail] == [
        2
    ]
    (drawn,) = [t for t in chat_turns(conversation) if t["role"] == "assistant"]
    assert "above its trigger of 204 tokens (a 4096-token window)" in drawn["compaction_notice"]
    # Once per run: the next turn measures the same overhead and says so in its own turn.
    later = turn(member, org, agent, "hello", conversation)
    assert [f["phase"] for f in compaction_frames(later)] == ["skipped"]
    drawn = [t for t in chat_turns(conversation) if t["role"] == "assistant"]
    assert [t["run_id"] for t in drawn if "compaction_notice" in t] == [run.pk, later.pk]
