"""One way for a tool to fail (seed 000, "Un error, un resultado y un rechazo")."""

import pytest
from pydantic_ai import Agent
from pydantic_ai.exceptions import UnexpectedModelBehavior
from pydantic_ai.toolsets import FunctionToolset

from apps.capabilities.tools.failures import LastAttemptArguments, refusal

from .helpers import Script, build, call, run_agent, tool_returns

SHORT_SERIES = call(
    "create_chart",
    title="Sales",
    x_values=["Jan", "Feb", "Mar"],
    series=[{"name": "EU", "values": [1, 2]}],
)


def test_a_bad_call_is_a_retry_request_while_the_budget_lasts():
    result, _ = run_agent([build("charts")], [[SHORT_SERIES], "fixed"])
    (part,) = tool_returns(result.all_messages())
    assert part.outcome == "retried"
    assert part.retry is not None and part.retry.cause == "model_retry"
    assert "Series 'EU' has 2 values but the axis has 3 points" in part.model_response_str()
    assert "one value per x_value" in part.model_response_str()  # what a correct call looks like


def test_the_last_attempt_returns_the_message_instead_of_ending_the_run():
    result, script = run_agent([build("charts")], [[SHORT_SERIES], [SHORT_SERIES], "gave up"])
    first, last = tool_returns(result.all_messages())
    assert first.outcome == "retried"
    assert last.outcome == "success"
    assert last.content == first.content  # the same message, now as the tool's result
    assert result.output == "gave up"


def test_a_corrected_call_after_a_retry_succeeds_and_resets_the_budget():
    good = call(
        "create_chart",
        title="Sales",
        x_values=["Jan", "Feb"],
        series=[{"name": "EU", "values": [1, 2]}],
    )
    result, _ = run_agent([build("charts")], [[SHORT_SERIES], [good], [SHORT_SERIES], "ok"])
    outcomes = [p.outcome for p in tool_returns(result.all_messages())]
    assert outcomes == ["retried", "success", "retried"]


def test_a_refusal_is_returned_as_text_not_a_retry():
    assert refusal("no file system here").startswith("Refused: ")


def test_arguments_that_do_not_match_the_schema_end_the_run_without_the_budget_capability():
    bad = call("update_task_status", task_id="x", status="finished-ish")
    with pytest.raises(UnexpectedModelBehavior):
        run_agent([build("planning")], [[bad], [bad], "never"])


def test_the_budget_capability_returns_a_schema_mismatch_on_the_last_attempt():
    bad = call("update_task_status", task_id="x", status="finished-ish")
    result, _ = run_agent(
        [build("planning")], [[bad], [bad], "carried on"], capabilities=[LastAttemptArguments()]
    )
    first, last = tool_returns(result.all_messages())
    assert first.outcome == "retried"
    assert last.outcome == "success"
    assert "was not made" in last.content and "status" in last.content
    assert result.output == "carried on"


def test_the_budget_capability_leaves_valid_calls_alone():
    toolset = FunctionToolset()

    @toolset.tool_plain
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    script = Script([[call("add", a=1, b=2)], "three"])
    result = Agent(
        script.model(), toolsets=[toolset], capabilities=[LastAttemptArguments()]
    ).run_sync("go")
    (part,) = tool_returns(result.all_messages())
    assert part.content == 3
