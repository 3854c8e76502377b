"""system_reminders through the real runner: the offline model's ``/steps N`` makes N + 1 model
requests, a scripted FunctionModel records what each request carried."""

from __future__ import annotations

import json

import pytest
from pydantic_ai.messages import CachePoint, ModelResponse, TextPart

from apps.capabilities.tools.system_reminders import RunReminders, is_system_reminder
from apps.runs.models import Conversation, Message, Run
from apps.runs.runner import execute_run, prepare
from apps.spend.models import LedgerEntry
from tests.runs.factories import published_agent, queued_run

from .scripted import drive_scripted

pytestmark = pytest.mark.django_db


def reminding_agent(org, max_steps=20, **config):
    return published_agent(
        org,
        capabilities=[{"id": "system_reminders", "config": config}],
        limits={"max_steps": max_steps},
    )


def turn(actor, org, agent, text, conversation) -> Run:
    run = queued_run(actor, org, agent, text, conversation=conversation)
    execute_run(run.pk)
    return Run.objects.get(pk=run.pk)


def thread(org, agent, member) -> Conversation:
    return Conversation.objects.create(organization=org, agent=agent, user=member)


def reminder_texts(messages) -> list[str]:
    return [
        "".join(c for c in part.content if isinstance(c, str))
        for m in messages
        for part in getattr(m, "parts", [])
        if is_system_reminder(part)
    ]


def test_an_empty_configuration_attaches_nothing(org, member):
    agent = reminding_agent(org)
    prepared = prepare(queued_run(member, org, agent, "hi"))
    assert not any(isinstance(c, RunReminders) for c in prepared.agent.root_capability.capabilities)


def test_the_cadence_counts_across_turns_and_is_kept_on_the_conversation(org, member):
    agent = reminding_agent(org, reminders=[{"content": "Answer in Spanish.", "interval": 2}])
    conversation = thread(org, agent, member)
    first = turn(member, org, agent, "/steps 4", conversation)  # requests 1-5: fires on 2 and 4
    assert first.status == "completed", first.error
    assert first.output == "Done after 4 steps."  # the offline model did not read it as the prompt
    conversation.refresh_from_db()
    assert conversation.reminder_counters == {"requests": 5, "fires": {"reminder:0": 2}}
    # Never in the stored history.
    assert "system-reminder" not in str(first.transcript)
    second = turn(member, org, agent, "/steps 1", conversation)  # requests 6-7: fires on 6
    assert second.status == "completed"
    conversation.refresh_from_db()
    assert conversation.reminder_counters == {"requests": 7, "fires": {"reminder:0": 3}}


def test_first_after_and_max_fires(org, member):
    agent = reminding_agent(
        org,
        reminders=[{"content": "Be brief.", "interval": 2, "first_after": 3, "max_fires": 2}],
    )
    conversation = thread(org, agent, member)
    turn(member, org, agent, "/steps 8", conversation)  # 9 requests: 3, 5 (7 and 9 over the cap)
    conversation.refresh_from_db()
    assert conversation.reminder_counters == {"requests": 9, "fires": {"reminder:0": 2}}


def test_what_the_model_is_sent_a_tail_reminder_behind_a_cache_breakpoint(org, member):
    agent = reminding_agent(
        org,
        reminders=[{"content": "Answer in Spanish.", "interval": 1}],
        goal_reanchor={"interval": 2},
    )
    seen: list[list] = []

    def model(messages, info):
        seen.append(messages)
        if len(seen) < 3:
            return _think_call()
        return ModelResponse(parts=[TextPart("hecho")])

    outcome, _, state = drive_scripted(
        queued_run(member, org, agent, "plan a trip"), function=model
    )
    assert outcome.status == "completed"
    first, second, third = seen
    tail = first[-1].parts[-1]
    assert is_system_reminder(tail)
    assert isinstance(tail.content[0], CachePoint)  # after the person's prompt: a breakpoint
    assert reminder_texts([first[-1]]) == [
        "<system-reminder>\nAnswer in Spanish.\n</system-reminder>"
    ]
    # The goal line joins on the second request.
    (on_second,) = reminder_texts([second[-1]])
    assert "Answer in Spanish." in on_second and "original request" in on_second
    # Each request carries only its own reminder: none accumulates in the history sent.
    assert len(reminder_texts(third)) == 1
    assert reminder_texts(state.messages) == []


def _think_call():
    from pydantic_ai.messages import ToolCallPart

    return ModelResponse(parts=[ToolCallPart("think", {"thought": "step"})])


def test_an_llm_reminder_is_written_by_the_runs_model_and_booked(org, member):
    agent = reminding_agent(org, llm_reminder={"interval": 2})
    run = turn(member, org, agent, "/steps 2", thread(org, agent, member))
    assert run.status == "completed", run.error
    entry = LedgerEntry.objects.get(ledger__run_id=run.pk, kind="compaction")
    assert entry.model_name == run.model_name and entry.output_tokens > 0
    assert run.cost_usd == sum(
        e.cost_usd for e in LedgerEntry.objects.filter(ledger__run_id=run.pk)
    )


def test_an_llm_reminder_with_no_request_to_spare_falls_back_to_the_goal_line(org, member):
    agent = reminding_agent(org, max_steps=2, llm_reminder={"interval": 2})
    seen: list[list] = []

    def model(messages, info):
        seen.append(messages)
        if len(seen) == 1:
            return _think_call()
        return ModelResponse(parts=[TextPart("done")])

    outcome, _, _ = drive_scripted(queued_run(member, org, agent, "go"), function=model)
    assert outcome.status == "completed"
    (text,) = reminder_texts([seen[1][-1]])
    assert "original request" in text
    assert not LedgerEntry.objects.filter(kind="compaction").exists()


def test_a_fired_reminder_never_reaches_the_persons_thread(org, member):
    agent = reminding_agent(org, reminders=[{"content": "Secret steering line.", "interval": 1}])
    run = turn(member, org, agent, "hello there", thread(org, agent, member))
    assert run.status == "completed"
    assert "Secret steering line." not in run.output
    assert "Secret steering" not in json.dumps(run.transcript)
    assert not Message.objects.filter(run=run, content__contains="Secret steering").exists()


def test_a_request_compaction_rewrote_still_carries_its_reminder(org, member, big_toolset):
    agent = published_agent(
        org,
        capabilities=[
            {"id": big_toolset},
            {
                "id": "system_reminders",
                "config": {"reminders": [{"content": "Be brief.", "interval": 1}]},
            },
            {
                "id": "compaction",
                "config": {"context_window": 4096, "max_fraction": 0.5, "keep_messages": 2},
            },
        ],
    )
    seen: list[list] = []

    def model(messages, info):
        if not info.function_tools:
            return ModelResponse(parts=[TextPart("A summary.")])  # the summarizer's own request
        seen.append(messages)
        if len(seen) == 1:
            from pydantic_ai.messages import ToolCallPart

            return ModelResponse(
                parts=[ToolCallPart("repeat", {"text": "abcdefghij", "times": 700})]
            )
        return ModelResponse(parts=[TextPart("done")])

    outcome, frames, _ = drive_scripted(queued_run(member, org, agent, "go"), function=model)
    assert outcome.status == "completed"
    assert [f["phase"] for f in frames if f["type"] == "compaction"] == ["started", "finished"]
    second = seen[1]
    assert any(type(p).__name__ == "CompactionPart" for m in second for p in m.parts)
    assert reminder_texts([second[-1]]) == ["<system-reminder>\nBe brief.\n</system-reminder>"]
