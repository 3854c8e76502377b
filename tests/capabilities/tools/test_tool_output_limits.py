"""tool_output_limits through the real runner on the offline model, scripted to return huge tool
results (``repeat`` writes a numbered line ``times`` times)."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
from asgiref.sync import async_to_sync
from pydantic_ai.messages import (
    ModelMessagesTypeAdapter,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)

from apps.capabilities.tools.tool_output_limits import RunSpillStore, SpillRefused, run_store
from apps.runs.models import Run
from apps.runs.runner import execute_run, prepare
from apps.spend.models import LedgerEntry
from tests.runs.factories import published_agent, queued_run

from .scripted import drive_scripted

pytestmark = pytest.mark.django_db

LINE = "abcdefghij"  # each numbered line is 18 characters with its number, space and newline


def limited_agent(org, big_toolset, **config):
    return published_agent(
        org,
        capabilities=[{"id": big_toolset}, {"id": "tool_output_limits", "config": config}],
        limits={"max_steps": 10},
    )


def call(tool: str, **args) -> str:
    return f"/call {tool} {json.dumps(args)}"


def run_now(actor, org, agent, text) -> Run:
    run = queued_run(actor, org, agent, text)
    execute_run(run.pk)
    return Run.objects.get(pk=run.pk)


def returns(run: Run) -> list[ToolReturnPart]:
    return [
        p
        for m in ModelMessagesTypeAdapter.validate_python(run.transcript)
        for p in getattr(m, "parts", [])
        if isinstance(p, ToolReturnPart)
    ]


def test_a_huge_return_is_spilled_and_the_transcript_keeps_only_the_handle_and_preview(
    org, member, big_toolset
):
    agent = limited_agent(org, big_toolset, threshold=10_000)
    run = run_now(member, org, agent, call("repeat", text=LINE, times=5_000))  # 89,999 chars
    assert run.status == "completed", run.error
    (returned,) = returns(run)
    content = returned.model_response_str()
    assert "[Tool output too large (89,999 chars); stored to handle 'tool_output/" in content
    assert "Read it with read_tool_result(handle=" in content
    assert "000001 abcdefghij" in content and "005000 abcdefghij" in content  # head and tail
    assert len(content) < 10_000
    assert returned.metadata["overflow_handle"].startswith("tool_output/")
    assert len(json.dumps(run.transcript)) < 20_000


def test_a_return_under_the_threshold_passes_untouched(org, member, big_toolset):
    agent = limited_agent(org, big_toolset, threshold=10_000)
    run = run_now(member, org, agent, call("repeat", text=LINE, times=100))
    (returned,) = returns(run)
    assert returned.content == "\n".join(f"{n:06d} {LINE}" for n in range(1, 101))


def test_a_spill_is_read_back_by_slices_and_pattern_later_in_the_run(org, member, big_toolset):
    agent = limited_agent(org, big_toolset, threshold=1_000)
    reads = [
        {"offset": 0, "limit": 2},
        {"offset": 0, "limit": 2, "from_end": True},
        {"pattern": "002999"},
    ]

    def model(messages, info):
        done = [
            p for m in messages for p in getattr(m, "parts", []) if isinstance(p, ToolReturnPart)
        ]
        if not done:
            return ModelResponse(parts=[ToolCallPart("repeat", {"text": LINE, "times": 3_000})])
        if len(done) <= len(reads):
            handle = done[0].metadata["overflow_handle"]
            return ModelResponse(
                parts=[ToolCallPart("read_tool_result", {"handle": handle, **reads[len(done) - 1]})]
            )
        return ModelResponse(parts=[TextPart("read it all")])

    run = queued_run(member, org, agent, "read the big result")
    outcome, frames, state = drive_scripted(run, function=model)
    assert outcome.status == "completed"
    spilled, head, tail, found = [
        p for m in state.messages for p in getattr(m, "parts", []) if isinstance(p, ToolReturnPart)
    ]
    handle = spilled.metadata["overflow_handle"]
    assert head.content.splitlines() == [
        f"[handle {handle!r}: 3,000 matching line(s); showing 2]",
        "000001 abcdefghij",
        "000002 abcdefghij",
    ]
    assert tail.content.splitlines()[1:] == ["002999 abcdefghij", "003000 abcdefghij"]
    assert found.content.splitlines()[1:] == ["002999 abcdefghij"]
    # A slice is never spilled again, and the spill lived in this run's store only.
    assert "too large" not in head.content
    assert handle.startswith("tool_output/")


def test_an_unknown_handle_is_a_retry_request_naming_what_to_use(org, member, big_toolset):
    agent = limited_agent(org, big_toolset, threshold=1_000)
    run = run_now(member, org, agent, call("read_tool_result", handle="tool_output/nope"))
    assert run.status == "completed"
    (returned,) = returns(run)
    assert returned.outcome == "retried"
    assert "No stored tool result for handle 'tool_output/nope'" in returned.model_response_str()


def test_a_spill_does_not_outlive_its_run(org, member, big_toolset):
    agent = limited_agent(org, big_toolset, threshold=1_000)
    first = run_now(member, org, agent, call("repeat", text=LINE, times=500))
    handle = returns(first)[0].metadata["overflow_handle"]
    later = run_now(member, org, agent, call("read_tool_result", handle=handle))
    assert "No stored tool result" in returns(later)[0].model_response_str()
    # Each run assembles its own store.
    one = prepare(queued_run(member, org, agent, "a")).resources
    two = prepare(queued_run(member, org, agent, "b")).resources
    assert run_store(one) is not run_store(two)


@pytest.mark.parametrize(
    ("strategy", "keeps_head", "keeps_tail"),
    [("head", True, False), ("tail", False, True), ("head_tail", True, True)],
)
def test_truncate_keeps_the_chosen_ends_with_a_marker(
    org, member, big_toolset, strategy, keeps_head, keeps_tail
):
    agent = limited_agent(
        org,
        big_toolset,
        action="truncate",
        threshold=5_000,
        max_chars=2_000,
        truncation_strategy=strategy,
    )
    run = run_now(member, org, agent, call("repeat", text=LINE, times=2_000))
    (returned,) = returns(run)
    content = returned.content
    assert len(content) <= 2_000
    assert "truncated" in content or "omitted" in content
    assert ("000001 abcdefghij" in content) is keeps_head
    assert ("002000 abcdefghij" in content) is keeps_tail


def test_max_chars_left_unset_never_keeps_more_than_the_threshold(org, member, big_toolset):
    agent = limited_agent(org, big_toolset, action="truncate", threshold=3_000)
    run = run_now(member, org, agent, call("repeat", text=LINE, times=2_000))
    (returned,) = returns(run)
    assert len(returned.content) <= 3_000


def test_over_tokens_measures_the_threshold_in_estimated_tokens(org, member, big_toolset):
    # 1,000 tokens is about 4,000 characters: 200 lines (3,400 chars) pass, 400 (6,800) do not.
    agent = limited_agent(org, big_toolset, action="truncate", threshold=1_000, over_tokens=True)
    short = run_now(member, org, agent, call("repeat", text=LINE, times=200))
    assert len(returns(short)[0].content) == 200 * 18 - 1
    long = run_now(member, org, agent, call("repeat", text=LINE, times=400))
    assert len(returns(long)[0].content) <= 4_000


@pytest.mark.parametrize("strip", [True, False])
def test_strip_ansi_removes_colour_codes_before_measuring_and_reducing(
    org, member, big_toolset, strip
):
    agent = limited_agent(
        org, big_toolset, action="truncate", threshold=5_000, max_chars=2_000, strip_ansi=strip
    )
    run = run_now(member, org, agent, call("repeat", text="\u001b[31mred\u001b[0m", times=1_000))
    (returned,) = returns(run)
    assert ("\u001b[" in returned.content) is not strip
    assert ("000001 red" in returned.content) is strip


def test_summarize_replaces_the_return_with_a_summary_booked_to_the_run(org, member, big_toolset):
    agent = limited_agent(org, big_toolset, action="summarize", threshold=5_000)
    run = run_now(member, org, agent, call("repeat", text=LINE, times=1_000))
    assert run.status == "completed", run.error
    (returned,) = returns(run)
    # The offline model, asked to summarize, quotes the start of what it was given.
    assert returned.content.startswith("You said")
    assert len(returned.content) < 1_000
    entries = LedgerEntry.objects.filter(ledger__run_id=run.pk)
    summary = entries.get(kind="compaction")
    assert summary.input_tokens > 17_000 // 4 and summary.output_tokens > 0
    assert run.cost_usd == sum((e.cost_usd for e in entries), Decimal("0"))
    assert run.cost_usd > sum(
        (e.cost_usd for e in entries.filter(kind="model_request")), Decimal("0")
    )


def test_a_summary_that_fails_falls_back_to_a_spill(org, member, big_toolset):
    # A summary_prompt the offline model answers with an error shape is not available; a
    # summarizer over no request budget is: one step left for the run means none for the summary.
    agent = published_agent(
        org,
        capabilities=[
            {"id": big_toolset},
            {"id": "tool_output_limits", "config": {"action": "summarize", "threshold": 5_000}},
        ],
        limits={"max_steps": 2},
    )
    run = run_now(member, org, agent, call("repeat", text=LINE, times=1_000))
    (returned,) = returns(run)
    assert "stored to handle 'tool_output/" in returned.model_response_str()


def test_the_run_store_refuses_past_its_allowance_and_the_spill_becomes_a_truncation():
    store = RunSpillStore(max_bytes=100)

    async def go():
        await store.write("a", b"x" * 80)
        with pytest.raises(SpillRefused):
            await store.write("b", b"x" * 80)

    async_to_sync(go)()
    assert store.handles() == ["tool_output/a"]


def test_with_guardrails_the_spilled_copy_is_already_scrubbed(org, member, big_toolset):
    """The tool-result guard runs before the spill, so a slice read back is the checked text."""
    agent = published_agent(
        org,
        capabilities=[
            {"id": big_toolset},
            {"id": "tool_output_limits", "config": {"threshold": 1_000}},
            {"id": "guardrails", "config": {"redact_pii_tool": True, "phone_regions": "US"}},
        ],
    )

    def model(messages, info):
        done = [
            p for m in messages for p in getattr(m, "parts", []) if isinstance(p, ToolReturnPart)
        ]
        if not done:
            return ModelResponse(
                parts=[ToolCallPart("repeat", {"text": "call 415-555-0132", "times": 200})]
            )
        if len(done) == 1:
            handle = done[0].metadata["overflow_handle"]
            return ModelResponse(
                parts=[ToolCallPart("read_tool_result", {"handle": handle, "limit": 3})]
            )
        return ModelResponse(parts=[TextPart("done")])

    outcome, _, state = drive_scripted(queued_run(member, org, agent, "go"), function=model)
    assert outcome.status == "completed"
    spilled, read = [
        p for m in state.messages for p in getattr(m, "parts", []) if isinstance(p, ToolReturnPart)
    ]
    assert "415-555-0132" not in spilled.model_response_str()
    assert read.content.splitlines()[1] == "000001 call [redacted:phone]"


def test_a_custom_summary_prompt_is_what_the_summarizer_is_told(org, member, big_toolset):
    agent = limited_agent(
        org,
        big_toolset,
        action="summarize",
        threshold=5_000,
        summary_prompt="Condense the {tool_name} output: {output}",
    )
    run = run_now(member, org, agent, call("repeat", text=LINE, times=1_000))
    (returned,) = returns(run)
    # The offline model quotes the prompt it was given.
    assert returned.content.startswith('You said "Condense the repeat output: 000001 abcdefghij')
