"""Delegation through the real runner: one ledger, honest rows, approvals that continue in place.

Every agent here runs on the offline model (a FunctionModel following MAP.md's contract), so a
parent's ``/call task {...}`` hands its delegate a description that is itself a script."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
from django.db.models import Sum

from apps.approvals.models import ToolApproval
from apps.approvals.services import approval_decide
from apps.runs.events import frames_after
from apps.runs.models import Run
from apps.runs.runner import execute_run
from apps.runs.services import run_create
from apps.spend.models import LedgerEntry
from tests.runs.delegating import ADD, delegating, gated_helper, run_of, task_call
from tests.runs.factories import published_agent


def own_entries(run: Run, **filters):
    return LedgerEntry.objects.filter(ledger__run=run, **filters)


def total(entries) -> Decimal:
    return entries.aggregate(total=Sum("cost_usd"))["total"] or Decimal("0")


@pytest.mark.django_db
def test_a_sync_delegation_books_into_the_runs_one_ledger_and_gets_its_own_row(org, member):
    helper = published_agent(org, name="Helper", capabilities=[{"id": "planning"}])
    parent = delegating(org, helper)

    run = run_of(member, org, parent, task_call("/call read_plan {}", "helper"))

    assert run.status == "completed", run.error
    child = Run.objects.get(parent_run=run)
    assert child.agent_id == helper.pk and child.status == "completed"
    assert child.subagent_task_id
    delegated = own_entries(run, delegation=child.subagent_task_id)
    assert delegated.count() == child.request_count == 2
    assert set(delegated.values_list("agent_id", flat=True)) == {helper.pk}
    assert set(delegated.values_list("billed_delegation", flat=True)) == {child.subagent_task_id}
    # The child's row is its share; the parent's row is the whole ledger, the authority.
    assert child.cost_usd == total(delegated) > 0
    assert (
        run.cost_usd
        == total(own_entries(run))
        == total(own_entries(run, delegation="")) + child.cost_usd
    )
    assert child.started_at <= child.ended_at
    assert "no plan" in child.output.lower() or child.output
    frames = [f["type"] for f in frames_after(run.pk)]
    assert "subagent_started" in frames and "subagent_finished" in frames
    assert "subagent_recorded" in frames


@pytest.mark.django_db
def test_an_approval_two_levels_down_parks_the_run_and_approving_continues_that_delegate(
    org, member, operator
):
    from apps.runs.resume import run_resume

    mailer = gated_helper(org)
    middle = delegating(org, mailer, name="Coordinator")
    parent = delegating(org, middle, config={"max_depth": 2})

    run = run_of(member, org, parent, task_call(task_call(ADD, "mailer"), "coordinator"))

    assert run.status == "awaiting_approval", run.error
    approval = ToolApproval.objects.get(run=run)
    # The queue names the delegate and the arguments it proposed (its own gate parked it).
    assert (approval.tool_name, approval.arguments) == (
        "add_task",
        {"content": "Email the customer"},
    )
    assert approval.delegate_name == "mailer" and approval.delegate_agent_id == mailer.pk
    tree = run.paused_state["delegates"]
    assert [node["name"] for node in tree] == ["coordinator"]
    assert [node["name"] for node in tree[0]["delegates"]] == ["mailer"]
    mailer_task = tree[0]["delegates"][0]["task_id"]
    before = own_entries(run, delegation=mailer_task).count()
    assert before == 1
    assert not Run.objects.filter(parent_run=run).exists()  # a row only when a delegation ends
    frame = [f for f in frames_after(run.pk) if f["type"] == "tool_approval_required"][0]
    assert frame["delegate"]["name"] == "mailer"

    approval_decide(actor=operator, approval=approval, decision="approve")
    run_resume(run_id=run.pk)

    run.refresh_from_db()
    assert run.status == "completed", run.error
    coordinator_row = Run.objects.get(parent_run=run)
    mailer_row = Run.objects.get(parent_run=coordinator_row)
    assert mailer_row.agent_id == mailer.pk and mailer_row.subagent_task_id == mailer_task
    # Continued in place, not delegated again: the same task id, both segments on its row.
    assert mailer_row.request_count == own_entries(run, delegation=mailer_task).count() == 2
    assert mailer_row.cost_usd == total(own_entries(run, billed_delegation=mailer_task))
    assert "Email the customer" in mailer_row.output
    started = [f for f in frames_after(run.pk) if f["type"] == "subagent_started"]
    assert sum(1 for f in started if f["name"] == "mailer") == 2  # the start, then the continuation
    assert [f.get("resumed") for f in started if f["name"] == "mailer"] == [None, True]
    assert run.cost_usd == total(own_entries(run))
    approval.refresh_from_db()
    assert approval.result and "Email the customer" in approval.result
    # The panel's closing cost covers both segments, like the row.
    closing = [
        f
        for f in frames_after(run.pk)
        if f["type"] == "subagent_finished" and f["task_id"] == mailer_task
    ]
    assert [Decimal(f["cost_usd"]) for f in closing] == [mailer_row.cost_usd]


@pytest.mark.django_db
def test_three_levels_of_nesting_each_get_their_row_under_their_parent(org, member):
    leaf = published_agent(org, name="Leaf", capabilities=[{"id": "planning"}])
    third = delegating(org, leaf, name="Third")
    second = delegating(org, third, name="Second", config={"max_depth": 2})
    root = delegating(org, second, config={"max_depth": 3})
    script = task_call(task_call(task_call("/call read_plan {}", "leaf"), "third"), "second")

    run = run_of(member, org, root, script)

    assert run.status == "completed", run.error
    second_row = Run.objects.get(parent_run=run)
    third_row = Run.objects.get(parent_run=second_row)
    leaf_row = Run.objects.get(parent_run=third_row)
    assert [r.agent_id for r in (second_row, third_row, leaf_row)] == [second.pk, third.pk, leaf.pk]
    # Each row is that agent's own requests; its delegates' are on their own rows, not in it.
    for row in (second_row, third_row, leaf_row):
        assert row.cost_usd == total(own_entries(run, billed_delegation=row.subagent_task_id)) > 0
    assert run.cost_usd == total(own_entries(run))
    assert run.cost_usd == total(own_entries(run, billed_delegation="")) + sum(
        r.cost_usd for r in (second_row, third_row, leaf_row)
    )
    # GET /runs lists top-level runs; parent_run_id lists what a run delegated.
    assert Run.objects.filter(parent_run__isnull=True, agent=root).count() == 1


@pytest.mark.django_db
def test_depth_is_bound_by_the_delegates_own_spec_at_the_limit_it_is_built_without_delegation(
    org, member
):
    from apps.runs.runner import assemble

    leaf = published_agent(org, name="Leaf", capabilities=[{"id": "planning"}])
    # Its own author chose 1: it delegates, its delegates do not, whatever its caller allows.
    narrow = delegating(org, leaf, name="Narrow", config={"max_depth": 1})
    below = delegating(org, narrow, name="Below")
    root = delegating(org, below, config={"max_depth": 3})
    run = run_create(actor=member, organization=org, agent=root, input="hi")

    scope = assemble(Run.objects.get(pk=run.pk)).resources.delegation.scope

    below_scope = scope.delegates["below"].scope
    assert scope.levels == 3 and below_scope.levels == 1  # min(3 - 1, its own 1)
    # At the limit: built without delegation rather than with a tool that can only refuse.
    assert below_scope.delegates["narrow"].scope is None


@pytest.mark.django_db
def test_max_fanout_is_a_result_the_model_can_act_on(org, member):
    helper = published_agent(org, name="Helper", capabilities=[{"id": "planning"}])
    parent = delegating(org, helper, config={"max_fanout": 1})
    one = task_call("/call read_plan {}", "helper")

    run = run_of(member, org, parent, f"{one}\n{one}")

    assert run.status == "completed", run.error
    assert Run.objects.filter(parent_run=run).count() == 1
    assert "runs at most 1 at once" in run.output


@pytest.mark.django_db
@pytest.mark.parametrize("what", ["missing version", "archived"])
def test_a_pin_that_cannot_run_fails_the_run_naming_the_delegate(org, member, what):
    helper = published_agent(org, name="Researcher", capabilities=[{"id": "planning"}])
    middle = delegating(org, helper, name="Middle")
    root = delegating(org, middle, config={"max_depth": 2})
    if what == "archived":
        helper.status = "archived"
        helper.save(update_fields=["status"])
    else:
        version = middle.current_version
        version.spec = {**version.spec, "subagents": [{"agent_id": helper.pk, "version": 9}]}
        version.save(update_fields=["spec"])

    run = run_of(member, org, root, task_call("hi", "middle"))

    assert run.status == "failed" and run.stop_reason == "not_runnable"
    assert "Researcher" in run.error
    assert not Run.objects.filter(parent_run=run).exists()


def drive_with(run: Run, script) -> Run:
    """The runner's own prepare → drive → booking, with the run's agent on a scripted model
    (the parent must read a task id and wait for it, which the offline script cannot say)."""
    from asgiref.sync import async_to_sync
    from pydantic_ai.models.function import FunctionModel

    from apps.runs.runner import DriveState, Outcome, _book_end, drive, prepare
    from apps.runs.services import run_claim_running

    assert run_claim_running(run.pk)
    run = Run.objects.select_related("organization", "agent", "agent_version").get(pk=run.pk)
    prepared = prepare(run)
    state = DriveState()

    async def stream(messages, info):
        from pydantic_ai.messages import TextPart, ToolCallPart
        from pydantic_ai.models.function import DeltaToolCall

        response = script(messages, info)
        calls = [p for p in response.parts if isinstance(p, ToolCallPart)]
        if calls:
            yield {
                i: DeltaToolCall(name=c.tool_name, json_args=c.args_as_json_str())
                for i, c in enumerate(calls)
            }
            return
        for part in response.parts:
            if isinstance(part, TextPart):
                yield part.content

    with prepared.agent.override(model=FunctionModel(script, stream_function=stream)):
        async_to_sync(drive)(prepared, None, state)
    booking = {
        "run": run,
        "model": prepared.model,
        "records": prepared.meter.records,
        "messages": state.messages,
        "output": state.output,
    }
    _book_end(
        run.pk, Outcome("completed", "answered"), booking, prepared, None, state.messages, False
    )
    return Run.objects.get(pk=run.pk)


def background_script(description: str, delegate: str, *, then_spend_output_tokens: int = 0):
    """Delegate in the background, wait for the task, then answer (spending what it is told)."""
    import re

    from pydantic_ai.messages import (
        ModelRequest,
        ModelResponse,
        TextPart,
        ToolCallPart,
        ToolReturnPart,
    )

    def script(messages, info):
        returns = [
            p
            for m in messages
            if isinstance(m, ModelRequest)
            for p in m.parts
            if isinstance(p, ToolReturnPart)
        ]
        if not returns:
            return ModelResponse(
                parts=[
                    ToolCallPart("task", {"description": description, "subagent_type": delegate})
                ]
            )
        if len(returns) == 1:
            task_id = re.search(r"Task ID: (\w+)", returns[0].model_response_str()).group(1)
            return ModelResponse(parts=[ToolCallPart("wait_tasks", {"task_ids": [task_id]})])
        # The streamed usage is estimated from the words sent: one token a word.
        padding = " spent" * then_spend_output_tokens
        return ModelResponse(
            parts=[TextPart("Done: " + returns[-1].model_response_str()[:3000] + padding)]
        )

    return script


@pytest.mark.django_db
def test_a_background_delegation_costs_its_own_entries_not_what_the_parent_spent_after(org, member):
    # Seed 003: a delegate that spent $0.01 was recorded at $0.51 when the parent spent $0.50
    # after it; a delegation's cost is the sum of its own entries, whenever it settles.
    helper = published_agent(org, name="Helper", capabilities=[{"id": "planning"}])
    parent = delegating(org, helper, config={"mode": "async"})
    run = run_create(actor=member, organization=org, agent=parent, input="go")

    run = drive_with(
        run,
        background_script("/call read_plan {}", "helper", then_spend_output_tokens=33_334),
    )

    child = Run.objects.get(parent_run=run)
    assert child.status == "completed"
    parent_own = total(own_entries(run, delegation=""))
    assert parent_own >= Decimal("0.50")
    # About a cent of its own (the planning tools' definitions), never the parent's half dollar.
    assert Decimal("0") < child.cost_usd < Decimal("0.05")
    assert child.cost_usd == total(own_entries(run, billed_delegation=child.subagent_task_id))
    assert run.cost_usd == parent_own + child.cost_usd
    # Its span is the task handle's: when the delegate started and ended, not when it was booked.
    assert run.started_at <= child.started_at <= child.ended_at < run.ended_at


@pytest.mark.django_db
def test_a_gated_tool_in_a_background_delegation_is_refused_telling_the_model_to_use_sync(
    org, member
):
    mailer = gated_helper(org)
    parent = delegating(org, mailer, config={"mode": "async"})
    run = run_create(actor=member, organization=org, agent=parent, input="go")

    run = drive_with(run, background_script(ADD, "mailer"))

    assert not ToolApproval.objects.filter(run=run).exists()
    assert 'mode="sync"' in run.output
    assert Run.objects.get(parent_run=run).status == "completed"


@pytest.mark.django_db
def test_the_parents_cap_sees_every_delegate_request_before_the_next(org, member):
    from tests.runs.factories import book_spend, queued_run

    helper = published_agent(org, name="Helper", capabilities=[{"id": "planning"}])
    parent = delegating(org, helper, budget={"monthly_usd": "1.00"})
    # The parent's month is a hair under its cap: its own first request is admitted, and the
    # delegate's first request — booked on this run's ledger, against this run's caps — is not.
    book_spend(queued_run(member, org, parent), Decimal("0.9999"))

    run = run_of(member, org, parent, task_call("/call read_plan {}", "helper"))

    assert run.status == "budget_exceeded", run.error
    assert run.budget_refusal["scope"] == "agent"
    child = Run.objects.get(parent_run=run)
    assert child.status == "budget_exceeded" and "monthly budget of $1.00" in child.error
    assert child.request_count == 0
    assert own_entries(run, delegation=child.subagent_task_id).count() == 0


@pytest.mark.django_db
def test_a_delegates_own_monthly_cap_does_not_apply_inside_the_parents_run(org, member):
    from tests.runs.factories import book_spend, queued_run

    helper = published_agent(
        org, name="Helper", capabilities=[{"id": "planning"}], budget={"monthly_usd": "0.01"}
    )
    book_spend(queued_run(member, org, helper), Decimal("5"))  # far past its own cap
    parent = delegating(org, helper)

    run = run_of(member, org, parent, task_call("/call read_plan {}", "helper"))

    assert run.status == "completed", run.error
    assert Run.objects.get(parent_run=run).status == "completed"
    # Its own cap still governs its own runs.
    assert run_of(member, org, helper, "hello").status == "budget_exceeded"


@pytest.mark.django_db(transaction=True)
def test_each_delegate_is_priced_by_its_own_provider(
    org, owner, member, allow_local_model_requests
):
    from apps.spend.pricing import price_usage
    from apps.vault.services import secret_create
    from tests.runs.factories import compatible_profile
    from tests.runs.fake_openai import FakeOpenAI

    with FakeOpenAI() as server:
        secret = secret_create(
            actor=owner, organization=org, name="k", purpose="openai_compatible", value="sk-test-1"
        )
        profile = compatible_profile(
            org, base_url=server.base_url, model_name="gpt-4o-mini", secret=secret
        )
        helper = published_agent(org, name="Helper", model_profile_id=profile.pk)
        parent = delegating(org, helper)

        run = run_of(member, org, parent, task_call("say hi", "helper"))

    assert run.status == "completed", run.error
    child = Run.objects.get(parent_run=run)
    entry = own_entries(run, delegation=child.subagent_task_id).get()
    assert (entry.provider, entry.model_name) == ("openai_compatible", "gpt-4o-mini")
    assert (
        entry.priced
        and entry.cost_usd
        == price_usage(
            "openai_compatible", "gpt-4o-mini", entry.input_tokens, entry.output_tokens
        ).cost_usd
    )
    assert (child.model_provider, child.cost_usd) == ("openai_compatible", entry.cost_usd)
    assert set(own_entries(run, delegation="").values_list("provider", flat=True)) == {"offline"}


WRITER = {"name": "writer", "description": "Writes prose.", "instructions": "You write."}


@pytest.mark.django_db
def test_an_inline_specialist_gets_no_row_and_bills_to_its_nearest_published_ancestor(org, member):
    coordinator = published_agent(
        org,
        name="Coordinator",
        capabilities=[{"id": "subagents", "config": {"inline": [WRITER]}}],
    )
    parent = delegating(org, coordinator, config={"max_depth": 2, "inline": [WRITER]})
    script = "\n".join(
        [task_call(task_call("draft it", "writer"), "coordinator"), task_call("and you", "writer")]
    )

    run = run_of(member, org, parent, script)

    assert run.status == "completed", run.error
    coordinator_row = Run.objects.get(parent_run=run)  # the only delegated row: writers get none
    assert not Run.objects.filter(parent_run=coordinator_row).exists()
    assert Run.objects.filter(parent_run__isnull=False).count() == 1
    task = coordinator_row.subagent_task_id
    under_coordinator = own_entries(run, billed_delegation=task).exclude(delegation=task)
    assert under_coordinator.exists()  # the writer inside the coordinator bills to its row …
    assert set(under_coordinator.values_list("agent_id", flat=True)) == {coordinator.pk}
    assert coordinator_row.cost_usd == total(own_entries(run, billed_delegation=task))
    # … while the writer directly under the run's agent lands on the run's own row.
    direct = own_entries(run, billed_delegation="").exclude(delegation="")
    assert direct.exists() and set(direct.values_list("agent_id", flat=True)) == {parent.pk}
    started = [f for f in frames_after(run.pk) if f["type"] == "subagent_started"]
    writer_frames = [f for f in started if f["name"] == "writer"]
    assert writer_frames and all(f["kind"] == "inline" for f in writer_frames)
    assert writer_frames[0]["definition"]["instructions"] == "You write."


@pytest.mark.django_db(transaction=True)
def test_a_failed_delegation_keeps_the_controlled_sentence_on_its_row(
    org, owner, member, allow_local_model_requests
):
    from tests.runs.factories import compatible_profile
    from tests.runs.fake_openai import FakeOpenAI

    with FakeOpenAI() as server:
        profile = compatible_profile(org, base_url=server.base_url, model_name="broken-500")
        helper = published_agent(
            org, name="Helper", model_profile_id=profile.pk, capabilities=[{"id": "planning"}]
        )
        parent = delegating(org, helper)

        run = run_of(member, org, parent, task_call("/tools 1 read_plan", "helper"))

    assert run.status == "completed", run.error
    child = Run.objects.get(parent_run=run)
    assert (child.status, child.stop_reason) == ("failed", "provider_error")
    assert child.error == "The model provider failed to answer (HTTP 500)."
    assert server.base_url not in child.error
    finished = [f for f in frames_after(run.pk) if f["type"] == "subagent_finished"][0]
    assert finished["error"] == child.error


@pytest.mark.django_db
def test_deleting_the_parent_keeps_its_delegations_rows(org, member):
    helper = published_agent(org, name="Helper", capabilities=[{"id": "planning"}])
    parent = delegating(org, helper)
    run = run_of(member, org, parent, task_call("/call read_plan {}", "helper"))
    child = Run.objects.get(parent_run=run)

    Run.objects.filter(pk=run.pk).delete()

    child.refresh_from_db()
    assert child.parent_run_id is None and child.cost_usd > 0  # ON DELETE SET NULL


@pytest.mark.django_db
def test_deleting_a_delegate_while_the_run_is_parked_keeps_its_name_on_the_approval(org, member):
    mailer = gated_helper(org)
    parent = delegating(org, mailer)
    run = run_of(member, org, parent, task_call(ADD, "mailer"))
    assert run.status == "awaiting_approval"

    mailer.delete()

    approval = ToolApproval.objects.get(run=run)
    assert approval.delegate_agent_id is None and approval.delegate_name == "mailer"


@pytest.mark.django_db
def test_every_delegation_frame_matches_its_typed_definition(org, member, operator):
    from typing import get_type_hints

    from apps.runs import events
    from apps.runs.resume import run_resume

    mailer = gated_helper(org)
    parent = delegating(org, mailer)
    run = run_of(member, org, parent, task_call(ADD, "mailer"))
    approval_decide(actor=operator, approval=ToolApproval.objects.get(run=run), decision="approve")
    run_resume(run_id=run.pk)

    typed = {
        "subagent_started": events.SubagentStartedFrame,
        "subagent_text_delta": events.SubagentTextDeltaFrame,
        "subagent_tool_call": events.SubagentToolCallFrame,
        "subagent_tool_result": events.SubagentToolResultFrame,
        "subagent_parked": events.SubagentParkedFrame,
        "subagent_finished": events.SubagentFinishedFrame,
        "subagent_recorded": events.SubagentRecordedFrame,
        "tool_approval_required": events.ToolApprovalRequiredFrame,
    }
    frames = [f for f in frames_after(run.pk) if f["type"] in typed]
    assert set(typed) - {"subagent_text_delta"} <= {f["type"] for f in frames}
    for frame in frames:
        definition = typed[frame["type"]]
        declared = set(get_type_hints(definition)) | {"seq", "run_id"}
        assert set(frame) <= declared, (frame["type"], set(frame) - declared)
        assert definition.__required_keys__ <= set(frame), frame["type"]
        if frame["type"].startswith("subagent_"):
            assert frame["task_id"]


@pytest.mark.django_db
def test_a_delegate_gets_what_share_with_delegates_names_and_nothing_else(org, member):
    bare = published_agent(org, name="Bare")  # binds nothing of its own
    parent = delegating(
        org,
        bare,
        config={"share_with_delegates": ["planning"]},
        capabilities=[{"id": "planning"}, {"id": "charts"}],
    )

    run = run_of(member, org, parent, task_call("/call read_plan {}", "bare"))

    child = Run.objects.get(parent_run=run)
    calls = [
        f["tool_name"]
        for f in frames_after(run.pk)
        if f["type"] == "subagent_tool_result" and f["task_id"] == child.subagent_task_id
    ]
    assert calls == ["read_plan"]  # the shared planning binding reached it
    assert "Unknown tool" not in child.output

    # The parent's charts binding was not named: the delegate's assembly does not carry it.
    from apps.runs.runner import assemble

    later = run_create(actor=member, organization=org, agent=parent, input="hi")
    scope = assemble(Run.objects.get(pk=later.pk)).resources.delegation.scope
    assert [b.id for b in scope.delegates["bare"].bindings] == ["planning"]


@pytest.mark.django_db
def test_the_yaml_export_of_a_version_carries_its_pins(org, owner):
    from django.test import Client

    helper = published_agent(org, name="Helper")
    parent = delegating(org, helper)
    client = Client()
    client.force_login(owner)

    page = client.get(f"/agents/{parent.pk}/versions/1/").content.decode()

    assert "subagents:" in page and f"agent_id: {helper.pk}" in page


@pytest.mark.django_db
def test_an_approve_everything_session_writes_a_delegates_waived_call_as_a_standing_row(org, owner):
    org.chat_may_waive_approvals = True
    org.save(update_fields=["chat_may_waive_approvals"])
    mailer = gated_helper(org)
    parent = delegating(org, mailer)
    run = run_create(
        actor=owner,
        organization=org,
        agent=parent,
        input=task_call(ADD, "mailer"),
        surface="chat",
        approval_mode="approve_all",
    )
    execute_run(run.pk)

    run.refresh_from_db()
    assert run.status == "completed", run.error
    row = ToolApproval.objects.get(run=run)
    assert (row.status, row.decided_via, row.tool_name) == ("approved", "standing", "add_task")
    assert row.tool_call_id.startswith(Run.objects.get(parent_run=run).subagent_task_id + "/")


@pytest.mark.django_db(transaction=True)
def test_a_hung_delegate_fails_at_its_own_profiles_timeout_and_the_run_goes_on(
    org, member, allow_local_model_requests
):
    from tests.runs.factories import compatible_profile
    from tests.runs.fake_openai import FakeOpenAI

    with FakeOpenAI() as server:
        profile = compatible_profile(org, base_url=server.base_url, model_name="slow-hang")
        profile.request_timeout_seconds = 1
        profile.save(update_fields=["request_timeout_seconds"])
        helper = published_agent(org, name="Helper", model_profile_id=profile.pk)
        parent = delegating(org, helper)

        run = run_of(member, org, parent, task_call("hello", "helper"))

    assert run.status == "completed", run.error
    child = Run.objects.get(parent_run=run)
    assert (child.status, child.stop_reason) == ("failed", "provider_error")
    assert "did not answer within 1 seconds" in child.error


def _profile(org, label):
    from apps.agents.models import ModelProfile

    return ModelProfile.objects.create(
        organization=org, label=label, provider="offline", model_name="offline"
    )


@pytest.mark.django_db
def test_a_written_specialist_names_an_organizations_model_and_runs_on_the_runs_ledger(org, member):
    _profile(org, "Fast")
    parent = delegating(org, config={"allow_dynamic": True})
    create = "/call create_agent " + json.dumps(
        {"name": "poet", "description": "Writes", "instructions": "Write.", "model": "Fast"}
    )
    unknown = "/call create_agent " + json.dumps(
        {"name": "other", "description": "x", "instructions": "x", "model": "gpt-9"}
    )

    run = run_of(member, org, parent, f"{create}\n{unknown}")

    assert run.status == "completed", run.error
    assert "Specialist 'poet' created on Fast" in run.output
    # The refusal lists what the organization has.
    assert "is not one of this organization's model profiles. Name one of: Fast" in run.output

    one_off = "/call delegate " + json.dumps(
        {"description": "say hi", "instructions": "Be brief.", "name": "greeter", "model": "Fast"}
    )
    later = run_of(member, org, parent, one_off)
    assert later.status == "completed", later.error
    started = [f for f in frames_after(later.pk) if f["type"] == "subagent_started"]
    assert started[0]["kind"] == "dynamic"
    assert started[0]["definition"]["instructions"] == "Be brief."
    task_id = started[0]["task_id"]
    # No row (nobody published it); its spend is on the run's ledger, billed to the run's row.
    assert not Run.objects.filter(parent_run=later).exists()
    entries = own_entries(later, delegation=task_id)
    assert entries.exists() and set(entries.values_list("billed_delegation", flat=True)) == {""}


@pytest.mark.django_db
def test_written_specialists_are_capped_per_run(org, member, settings):
    settings.MAX_DYNAMIC_SPECIALISTS = 1
    _profile(org, "Fast")
    parent = delegating(org, config={"allow_dynamic": True})
    lines = [
        "/call create_agent "
        + json.dumps({"name": n, "description": "x", "instructions": "x", "model": "Fast"})
        for n in ("one", "two")
    ]

    run = run_of(member, org, parent, "\n".join(lines))

    assert "created on Fast" in run.output and "MAX_DYNAMIC_SPECIALISTS" in run.output


@pytest.mark.django_db
def test_a_written_specialist_is_kept_across_a_park_but_not_into_the_next_turn(org, member):
    from apps.runs.runner import assemble

    _profile(org, "Fast")
    parent = delegating(
        org,
        config={"allow_dynamic": True},
        capabilities=[{"id": "planning", "tool_approval": {"add_task": "required"}}],
    )
    create = "/call create_agent " + json.dumps(
        {"name": "poet", "description": "Writes", "instructions": "Write.", "model": "Fast"}
    )

    run = run_of(member, org, parent, f"{create}\n{ADD}")

    assert run.status == "awaiting_approval", run.error
    assert run.paused_state["dynamic_specialists"]["poet"]["model"] == "Fast"
    resumed = assemble(Run.objects.get(pk=run.pk), resume=True)
    assert "poet" in resumed.delegation.root.created
    fresh = run_create(actor=member, organization=org, agent=parent, input="again")
    assert assemble(Run.objects.get(pk=fresh.pk)).delegation.root.created == {}


@pytest.mark.django_db
def test_a_sync_delegate_asks_the_parents_person_and_continues_with_the_answer(org, member):
    from apps.approvals.models import Question
    from apps.approvals.services import question_answer
    from apps.runs.resume import run_resume

    helper = published_agent(org, name="Helper")
    parent = delegating(org, helper, config={"allow_questions": True})

    run = run_of(member, org, parent, task_call("/ask Should I send it?", "helper"), surface="chat")

    assert run.status == "awaiting_answer", run.error
    question = Question.objects.get(run=run)
    assert question.asked_user_id == member.pk  # the run's own person, never a model
    task_id = run.paused_state["delegates"][0]["task_id"]
    assert question.tool_call_id.startswith(task_id + "/")
    # The card names the delegate asking, so the chat draws it inside that delegate's panel.
    frame = [f for f in frames_after(run.pk) if f["type"] == "question"][0]
    assert frame["delegate"] == {"name": "helper", "task_id": task_id, "agent_id": helper.pk}
    header = question.questions[0]
    choice = header["options"][0]["label"]
    question_answer(
        actor=member,
        question=question,
        answers=[{"header": header["header"], "selected": [choice]}],
    )
    run_resume(run_id=run.pk)

    run.refresh_from_db()
    assert run.status == "completed", run.error
    child = Run.objects.get(parent_run=run)
    assert child.subagent_task_id == task_id and choice in child.output


def _offered(prepared) -> set[str]:
    from asgiref.sync import async_to_sync
    from pydantic_ai.messages import ModelResponse, TextPart
    from pydantic_ai.models.function import FunctionModel

    seen = []

    def first_request(messages, info):
        seen.append(info)
        return ModelResponse(parts=[TextPart("done")])

    async def go():
        await prepared.agent.run(
            prepared.user_prompt,
            model=FunctionModel(first_request),
            usage_limits=prepared.usage_limits,
        )

    async_to_sync(go)()
    return {tool.name for tool in seen[0].function_tools}


@pytest.mark.django_db
def test_lifecycle_tools_are_offered_only_when_a_background_delegation_is_reachable(org, member):
    from apps.runs.runner import prepare

    helper = published_agent(org, name="Helper")
    lifecycle = {
        "check_task",
        "wait_tasks",
        "list_active_tasks",
        "send_message_to_subagent",
        "soft_cancel_task",
        "hard_cancel_task",
    }

    def offered(agent):
        run = run_create(actor=member, organization=org, agent=agent, input="hi")
        return _offered(prepare(Run.objects.get(pk=run.pk)))

    sync_only = offered(delegating(org, helper, name="Sync"))
    assert "task" in sync_only and not (sync_only & lifecycle)
    # A pinned delegate preferring the background makes it reachable: only the runner sees that.
    pinned_async = offered(delegating(org, {"agent_id": helper.pk, "version": 1, "mode": "async"}))
    assert lifecycle <= pinned_async
    assert not {"answer_subagent", "create_agent", "delegate"} & pinned_async
    # Bound without any delegate, nothing attaches.
    assert not offered(delegating(org, name="Nobody")) & ({"task"} | lifecycle)


@pytest.mark.django_db
def test_auto_is_resolved_before_the_delegation_starts(org, member):
    helper = published_agent(org, name="Helper", capabilities=[{"id": "planning"}])
    parent = delegating(org, helper, config={"mode": "auto"})

    run = run_of(member, org, parent, task_call("/call read_plan {}", "helper"))

    started = [f for f in frames_after(run.pk) if f["type"] == "subagent_started"]
    assert [f["mode"] for f in started] == ["sync"]  # a short task: the library's rule says wait
    assert Run.objects.get(parent_run=run).status == "completed"


@pytest.mark.django_db
def test_a_delegate_stopped_by_its_own_step_limit_keeps_the_limits_sentence(org, member):
    helper = published_agent(
        org, name="Helper", capabilities=[{"id": "planning"}], limits={"max_steps": 1}
    )
    parent = delegating(org, helper)

    run = run_of(member, org, parent, task_call("/steps 3", "helper"))

    assert run.status == "completed", run.error
    child = Run.objects.get(parent_run=run)
    assert (child.status, child.stop_reason) == ("failed", "step_limit")
    assert "step limit of 1 model requests (limits.max_steps)" in child.error
    assert child.request_count == 1


@pytest.mark.django_db
def test_wait_tasks_cuts_a_long_result_with_a_marker_pointing_at_check_task(org, member):
    helper = published_agent(org, name="Helper", capabilities=[{"id": "planning"}])
    parent = delegating(org, helper, config={"mode": "async", "max_result_chars": 200})
    long_step = "/call add_task " + json.dumps({"content": "Check the ledger " * 30})
    run = run_create(actor=member, organization=org, agent=parent, input="go")

    run = drive_with(run, background_script(long_step, "helper"))

    child = Run.objects.get(parent_run=run)
    assert len(child.output) > 200
    assert (
        "showing 200 of" in run.output and f"check_task('{child.subagent_task_id}')" in run.output
    )


@pytest.mark.django_db
def test_a_delegates_own_mode_is_named_next_to_it_in_the_instructions(org, member):
    from apps.runs.runner import assemble

    slow = published_agent(org, name="Researcher")
    quick = published_agent(org, name="Checker")
    parent = delegating(org, {"agent_id": slow.pk, "version": 1, "mode": "async"}, quick)
    run = run_create(actor=member, organization=org, agent=parent, input="hi")

    instructions = "\n".join(assemble(Run.objects.get(pk=run.pk)).instructions)

    assert "- researcher (runs in the background and returns a task id)" in instructions
    assert "- checker (waits for its answer)" in instructions
    assert "At most 3 delegations run at once" in instructions
