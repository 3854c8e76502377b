"""Delegates stream under the parent's output check: a delegation's ``subagent_text_delta`` frames
are held per part, checked with the parent's guardrails ``*_out`` and only then sent (redacted);
a blocked term in a delegate's answer ends the run ``guardrail_blocked`` before that answer is
shown as the ``task`` call's result or read by the parent's model."""

from __future__ import annotations

from typing import get_type_hints

import pytest

from apps.runs.events import SubagentTextDeltaFrame, frames_after
from apps.runs.models import Run
from apps.spend.models import LedgerEntry

from .delegating import delegating, run_of, task_call
from .factories import published_agent

pytestmark = pytest.mark.django_db

GITHUB_TOKEN = "ghp_" + "c" * 36


def delegate_text(run: Run) -> str:
    return "".join(f["delta"] for f in frames_after(run.pk) if f["type"] == "subagent_text_delta")


def guarded_parent(org, helper, **config):
    return delegating(org, helper, capabilities=[{"id": "guardrails", "config": config}])


def test_a_secret_in_a_delegates_stream_is_redacted_before_it_is_sent(org, member):
    helper = published_agent(org, name="Helper")
    parent = guarded_parent(org, helper, redact_secrets_out=True)

    run = run_of(member, org, parent, task_call(f"Repeat this token: {GITHUB_TOKEN}", "helper"))

    assert run.status == "completed", run.error
    shown = delegate_text(run)
    # The offline delegate quotes what it was asked: the token, redacted on the way out.
    assert "offline model answering" in shown
    assert GITHUB_TOKEN not in shown and "[redacted:" in shown
    child = Run.objects.get(parent_run=run)
    assert GITHUB_TOKEN in child.output  # the delegate's own row is unguarded: only the stream is
    deltas = [f for f in frames_after(run.pk) if f["type"] == "subagent_text_delta"]
    assert deltas and all(
        set(f) <= set(get_type_hints(SubagentTextDeltaFrame)) | {"seq", "run_id"} and f["task_id"]
        for f in deltas
    )


def test_without_an_output_check_a_delegate_streams_as_is(org, member):
    """A tool-result check scrubs the delegation's answer for the parent's model, not the stream."""
    helper = published_agent(org, name="Helper")
    parent = guarded_parent(org, helper, redact_secrets_tool=True)
    run = run_of(member, org, parent, task_call(f"Repeat this token: {GITHUB_TOKEN}", "helper"))
    assert run.status == "completed", run.error
    assert GITHUB_TOKEN in delegate_text(run)


def test_a_blocked_term_in_a_delegates_answer_ends_the_run_before_it_is_shown(org, member):
    helper = published_agent(org, name="Helper")
    parent = guarded_parent(org, helper, blocked_keywords_out="project pineapple")

    run = run_of(member, org, parent, task_call("Tell me about project pineapple", "helper"))

    assert run.status == "guardrail_blocked" and run.stop_reason == "guardrail"
    assert "delegate's answer" in run.error and "pineapple" not in run.error
    assert "pineapple" not in delegate_text(run).lower()
    frames = frames_after(run.pk)
    # The delegation's answer is neither shown as the task call's result nor read by the model.
    assert not [f for f in frames if f["type"] == "tool_result" and f["tool_name"] == "task"]
    # The parent's model never read it: its one request was the task call.
    assert LedgerEntry.objects.filter(ledger__run=run, delegation="").count() == 1
    assert "pineapple" not in run.output.lower()
    assert frames[-1]["type"] == "run_finished" and frames[-1]["status"] == "guardrail_blocked"


def _checked_stream(**config):
    from apps.capabilities.tools.guardrails import OutputStreamFilter, guard_for
    from apps.runs.delegate_stream import DelegateStreamCheck

    guard = guard_for({"id": "guardrails", "config": config})
    sent: list[dict] = []
    return DelegateStreamCheck(
        OutputStreamFilter(check=guard.edge("out")), lambda *f: sent.extend(f)
    ), sent


def _delta(task_id: str, text: str) -> dict:
    return {"type": "subagent_text_delta", "task_id": task_id, "delta": text}


def test_a_secret_split_across_a_delegates_chunks_is_caught_and_other_delegations_pass():
    stream, sent = _checked_stream(redact_secrets_out=True)
    stream(_delta("a", "the token is " + GITHUB_TOKEN[:10]))
    stream(_delta("b", "hello from b"), {"type": "subagent_finished", "task_id": "b"})
    assert [f.get("delta") for f in sent] == ["hello from b", None]  # a is still held
    stream(_delta("a", GITHUB_TOKEN[10:] + " ok"))
    stream({"type": "subagent_tool_call", "task_id": "a", "tool_name": "x"})
    released = sent[2]
    assert released["type"] == "subagent_text_delta" and released["task_id"] == "a"
    assert GITHUB_TOKEN[:10] not in released["delta"] and "[redacted:" in released["delta"]
    assert sent[3]["type"] == "subagent_tool_call"  # after its text, in order
    stream.raise_if_blocked()  # nothing blocked


def test_a_blocked_term_split_across_a_delegates_parts_blocks_and_drops_the_rest():
    from apps.capabilities.tools.guardrails import GuardrailBlocked

    stream, sent = _checked_stream(blocked_keywords_out="project pineapple")
    stream(_delta("a", "About project"), {"type": "subagent_tool_call", "task_id": "a"})
    stream(_delta("a", " pineapple: it ships."), {"type": "subagent_finished", "task_id": "a"})
    stream(_delta("a", "more"))
    stream.flush()
    assert [f.get("delta") for f in sent if f["type"] == "subagent_text_delta"] == ["About project"]
    with pytest.raises(GuardrailBlocked) as blocked:
        stream.raise_if_blocked()
    assert blocked.value.edge == "delegate" and "pineapple" not in blocked.value.sentence
