"""The tools through the real runner on the offline model (``/call TOOL {json}``).

The runner resolves each run's ``RunResources`` (apps/capabilities/run_context.py) and hands it
to every builder and contribution; these tests cover the tools end to end.
"""

import json

import pytest
from pydantic_ai.messages import ModelMessagesTypeAdapter

from apps.capabilities.tools.charts import chart_artifact
from apps.runs.models import Run
from apps.runs.runner import execute_run
from tests.runs.factories import published_agent, queued_run

from .helpers import tool_returns

pytestmark = pytest.mark.django_db


def run_now(actor, org, agent, text) -> Run:
    run = queued_run(actor, org, agent, text)
    execute_run(run.pk)
    return Run.objects.get(pk=run.pk)


def stored_returns(run: Run):
    return tool_returns(ModelMessagesTypeAdapter.validate_python(run.transcript))


def slash_call(tool: str, **args) -> str:
    return f"/call {tool} {json.dumps(args)}"


def test_a_chart_of_three_numbers_is_drawn_and_stored_with_the_run(org, member):
    agent = published_agent(org, capabilities=[{"id": "charts"}])
    run = run_now(
        member,
        org,
        agent,
        slash_call(
            "create_chart",
            title="Three numbers",
            kind="bar",
            x_values=["A", "B", "C"],
            series=[{"name": "Value", "values": [3, 5, 8]}],
        ),
    )
    assert run.status == "completed"
    assert 'Drew the bar chart "Three numbers"' in run.output
    (part,) = stored_returns(run)
    assert chart_artifact(part.metadata)["series"] == [{"name": "Value", "values": [3.0, 5.0, 8.0]}]


def test_a_bad_chart_is_a_retry_and_the_run_carries_on(org, member):
    agent = published_agent(org, capabilities=[{"id": "charts"}])
    run = run_now(
        member,
        org,
        agent,
        slash_call(
            "create_chart",
            title="T",
            x_values=["A", "B", "C"],
            series=[{"name": "S", "values": [1]}],
        ),
    )
    assert run.status == "completed"
    (part,) = stored_returns(run)
    assert part.outcome == "retried"
    assert "Series 'S' has 1 values but the axis has 3 points" in part.content


def test_a_calculation_through_the_runner(org, member):
    agent = published_agent(org, capabilities=[{"id": "code_execution"}])
    run = run_now(member, org, agent, slash_call("run_python", code="print(2 ** 10)"))
    assert run.status == "completed"
    assert "1024" in run.output


def test_a_calculation_hitting_its_time_limit_through_the_runner(org, member):
    agent = published_agent(
        org, capabilities=[{"id": "code_execution", "config": {"timeout_secs": 0.5}}]
    )
    run = run_now(member, org, agent, slash_call("run_python", code="while True:\n    pass"))
    assert run.status == "completed"
    (part,) = stored_returns(run)
    assert part.outcome == "success" and "time limit of 0.5 seconds" in part.content


def test_a_name_error_through_the_runner_is_a_retry(org, member):
    agent = published_agent(org, capabilities=[{"id": "code_execution"}])
    run = run_now(member, org, agent, slash_call("run_python", code="print(undefined_name)"))
    assert run.status == "completed"
    (part,) = stored_returns(run)
    assert part.outcome == "retried" and "NameError" in part.content


def test_a_plan_within_one_run_and_no_tool_for_an_unbound_capability(org, member):
    agent = published_agent(org, capabilities=[{"id": "planning"}])
    run = run_now(
        member,
        org,
        agent,
        slash_call("write_plan", items=[{"content": "Collect"}, {"content": "Draw"}])
        + "\n"
        + "/call read_plan {}",
    )
    assert run.status == "completed"
    written, read = stored_returns(run)
    assert "Plan written: 2 step(s)" in written.content
    assert "Collect" in read.content  # parallel calls in one response share the run's store
    unbound = run_now(member, org, agent, slash_call("create_chart", title="x"))
    assert unbound.output == "I have no tool called create_chart."


def test_steps_use_read_plan_as_the_harmless_tool(org, member):
    agent = published_agent(org, capabilities=[{"id": "planning"}], limits={"max_steps": 5})
    run = run_now(member, org, agent, "/steps 2")
    assert run.status == "completed"
    assert [step.detail.get("tool_calls") for step in run.steps.all()][:2] == [
        ["read_plan"],
        ["read_plan"],
    ]
