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
