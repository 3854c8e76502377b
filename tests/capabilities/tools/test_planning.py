"""planning: the nine tools, the trailing reminder, and the conversation's plan across turns."""

import json

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import CachePoint, ModelRequest, UserPromptPart

from apps.capabilities.run_context import RunResources
from apps.capabilities.tools import contributions
from apps.capabilities.tools.planning import (
    REMINDER_OPEN,
    RunPlan,
    is_plan_reminder,
    plan_json,
    seed_plan,
    write_back,
)

from .helpers import Script, build, call, tool_returns, toolset_context

THREE_STEPS = [
    {"id": "a", "content": "Collect the numbers", "status": "completed"},
    {"id": "b", "content": "Draw the chart", "status": "in_progress"},
    {"id": "c", "content": "Write the summary", "status": "pending"},
]
FINISHED = [
    {"id": "a", "content": "Collect the numbers", "status": "completed"},
    {"id": "b", "content": "Draw the chart", "status": "cancelled"},
]


def turn(plan: RunPlan, steps, config=None):
    """One run of an agent binding planning, over the runner-owned ``plan``, as the runner wires it."""
    binding = {"id": "planning", "config": config or {}}
    resources = RunResources(plan=plan)
    toolset = build("planning", config, context=toolset_context(resources))
    script = Script(steps)
    agent = Agent(
        script.model(),
        toolsets=[toolset],
        instructions="\n\n".join(contributions.run_instructions([binding], resources)),
        capabilities=contributions.run_capabilities([binding], resources),
    )
    result = agent.run_sync("go")
    return result, script


def statuses(items):
    return {
        item["id"] if isinstance(item, dict) else item.id: (
            item["status"] if isinstance(item, dict) else item.status.value
        )
        for item in items
    }


# --- the conversation's plan ---------------------------------------------------------------------


def test_the_plan_survives_a_turn():
    first = seed_plan(stored=None)
    turn(first, [[call("write_plan", items=THREE_STEPS)], "planned"])
    stored = write_back(first, run_status="completed")
    assert stored.write and statuses(stored.value) == {
        "a": "completed",
        "b": "in_progress",
        "c": "pending",
    }

    second = seed_plan(stored=json.loads(json.dumps(stored.value)))
    result, _ = turn(second, [[call("read_plan")], "read"])
    (part,) = tool_returns(result.all_messages())
    assert "[b] Draw the chart (in_progress)" in part.content
    assert "1 completed, 1 in progress, 1 pending" in part.content


def test_a_finished_plan_is_kept_but_not_seeded():
    plan = seed_plan(stored=FINISHED)
    assert plan.items == [] and plan.opened_over_finished
    result, _ = turn(plan, [[call("read_plan")], "nothing"])
    assert "There is no plan yet" in tool_returns(result.all_messages())[0].content
    # The turn that opened empty over the finished plan writes nothing: the row is kept.
    assert write_back(plan, run_status="completed").write is False


def test_new_work_over_a_finished_plan_replaces_it():
    plan = seed_plan(stored=FINISHED)
    turn(plan, [[call("write_plan", items=[{"content": "Start over"}])], "ok"])
    written = write_back(plan, run_status="completed")
    assert written.write and [i["content"] for i in written.value] == ["Start over"]


def test_a_plan_with_a_blocked_step_is_seeded():
    stored = [*FINISHED, {"id": "c", "content": "Wait for legal", "status": "blocked"}]
    assert [i.id for i in seed_plan(stored=stored).items] == ["a", "b", "c"]


@pytest.mark.parametrize("status", ["failed", "cancelled", "budget_exceeded"])
def test_a_run_that_did_not_finish_puts_its_in_progress_step_back_to_pending(status):
    plan = seed_plan(stored=THREE_STEPS)
    written = write_back(plan, run_status=status)
    assert statuses(written.value) == {"a": "completed", "b": "pending", "c": "pending"}


@pytest.mark.parametrize("status", ["awaiting_answer", "awaiting_approval", "completed"])
def test_a_question_a_park_or_an_answer_keeps_the_step_in_progress(status):
    written = write_back(seed_plan(stored=THREE_STEPS), run_status=status)
    assert statuses(written.value)["b"] == "in_progress"


def test_a_resume_is_seeded_from_the_parked_state_intact():
    parked_plan = seed_plan(stored=None)
    turn(parked_plan, [[call("write_plan", items=THREE_STEPS)], "parked"])
    parked_state = plan_json(parked_plan.items)  # what the runner keeps with the parked run
    older_stored = [{"id": "z", "content": "Stale", "status": "pending"}]
    resumed = seed_plan(stored=older_stored, parked=parked_state)
    assert statuses(resumed.items) == {"a": "completed", "b": "in_progress", "c": "pending"}
    # Even a parked plan whose steps are all done is seeded as it was: it is mid-turn by construction.
    assert [i.id for i in seed_plan(stored=None, parked=FINISHED).items] == ["a", "b"]


def test_an_empty_checklist_over_no_stored_plan_writes_nothing():
    assert write_back(seed_plan(stored=None), run_status="completed").write is False


def test_clearing_a_live_plan_clears_the_column():
    plan = seed_plan(stored=THREE_STEPS)
    turn(plan, [[call("write_plan", items=[])], "cleared"])
    written = write_back(plan, run_status="completed")
    assert written.write and written.value is None


# --- the trailing reminder -----------------------------------------------------------------------


def test_the_plan_comes_back_as_a_trailing_reminder_never_in_the_instructions_or_history():
    plan = seed_plan(stored=THREE_STEPS)
    result, script = turn(plan, [[call("add_task", content="Send it")], "ok"])
    for info, messages in zip(script.infos, script.requests, strict=True):
        assert "Draw the chart" not in (info.instructions or "")
        last = messages[-1]
        assert isinstance(last, ModelRequest)
        reminder = last.parts[-1]
        assert is_plan_reminder(reminder)
        assert isinstance(reminder.content[0], CachePoint)  # after a cache breakpoint
        assert "Draw the chart" in "".join(c for c in reminder.content if isinstance(c, str))
    # The second request already shows the step the tool just added.
    assert "Send it" in "".join(
        c for c in script.requests[1][-1].parts[-1].content if isinstance(c, str)
    )
    stored = [p for m in result.all_messages() if isinstance(m, ModelRequest) for p in m.parts]
    assert not any(is_plan_reminder(p) for p in stored)


def test_no_reminder_while_there_is_no_plan():
    _, script = turn(seed_plan(stored=None), ["hello"])
    assert not any(is_plan_reminder(p) for p in script.requests[0][-1].parts)
    assert "write_plan" in script.infos[0].instructions  # the static guidance is there


def test_the_reminder_is_recognisable_by_its_opening_tag():
    assert is_plan_reminder(UserPromptPart(content=[REMINDER_OPEN + "\n", "x"]))
    assert not is_plan_reminder(UserPromptPart(content="hello"))


# --- the tools -----------------------------------------------------------------------------------


def test_an_unknown_id_is_a_retry_listing_the_ids():
    plan = seed_plan(stored=THREE_STEPS)
    result, _ = turn(plan, [[call("update_task_status", task_id="zz", status="completed")], "ok"])
    (part,) = tool_returns(result.all_messages())
    assert part.outcome == "retried"
    assert "no step with id 'zz'" in part.content and "b (Draw the chart)" in part.content


def test_blocked_needs_subtasks():
    plan = seed_plan(stored=THREE_STEPS)
    result, _ = turn(plan, [[call("update_task_status", task_id="c", status="blocked")], "ok"])
    assert tool_returns(result.all_messages())[0].outcome == "retried"
    assert statuses(plan.items)["c"] == "pending"


def test_a_batch_with_one_invalid_entry_applies_nothing():
    plan = seed_plan(stored=THREE_STEPS)
    updates = [{"task_id": "b", "status": "completed"}, {"task_id": "nope", "status": "completed"}]
    result, _ = turn(plan, [[call("update_task_statuses", updates=updates)], "ok"])
    assert tool_returns(result.all_messages())[0].outcome == "retried"
    assert statuses(plan.items)["b"] == "in_progress"


def test_dependencies_block_a_step_until_its_prerequisite_is_done():
    plan = RunPlan()
    steps = [
        [
            call(
                "write_plan",
                items=[{"id": "a", "content": "Draft"}, {"id": "b", "content": "Review"}],
            )
        ],
        [call("set_dependency", task_id="b", depends_on_id="a")],
        [call("get_available_tasks")],
        [call("update_task_status", task_id="a", status="completed")],
        "done",
    ]
    result, _ = turn(plan, steps, {"enable_subtasks": True})
    returns = tool_returns(result.all_messages())
    assert "status blocked" in returns[1].content
    assert "[a] Draft" in returns[2].content and "[b]" not in returns[2].content
    assert statuses(plan.items) == {"a": "completed", "b": "pending"}


def test_a_dependency_cycle_is_a_retry():
    plan = seed_plan(
        stored=[{"id": "a", "content": "A", "depends_on": ["b"]}, {"id": "b", "content": "B"}]
    )
    result, _ = turn(
        plan,
        [[call("set_dependency", task_id="b", depends_on_id="a")], "ok"],
        {"enable_subtasks": True},
    )
    (part,) = tool_returns(result.all_messages())
    assert part.outcome == "retried" and "cycle" in part.content


def test_subtasks_and_removal():
    plan = seed_plan(stored=THREE_STEPS)
    steps = [
        [call("add_subtask", parent_id="b", content="Pick colours")],
        [call("remove_task", task_id="b")],
        "ok",
    ]
    result, _ = turn(plan, steps, {"enable_subtasks": True})
    returns = tool_returns(result.all_messages())
    assert "under [b] Draw the chart" in returns[0].content
    assert "and 1 subtask(s)" in returns[1].content
    assert [i.id for i in plan.items] == ["a", "c"]


def test_no_planning_tool_is_side_effecting():
    from apps.capabilities.registry import get_capability

    assert not any(t.side_effecting for t in get_capability("planning").tools)
