"""The chat transcript drawn from a stored run (apps/runs/transcript.py)."""

import pytest
from pydantic_ai.messages import (
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    TextPart,
    ToolCallPart,
)

from apps.runs.transcript import run_trace

from .factories import published_agent, queued_run


@pytest.mark.django_db
def test_a_tool_call_sent_back_for_a_retry_is_drawn_as_its_result(org, member):
    """A call the tool refused with a retry comes back to the model as a retry, not a result;
    the run's trace shows what the model was told (pydantic-ai 2.62 reads a stored retry prompt
    back as a tool return marked ``retried``; the transcript draws either shape)."""
    run = queued_run(member, org, published_agent(org), "plan it")
    retry = RetryPromptPart(
        content="items must be a list", tool_name="write_plan", tool_call_id="call-1"
    )
    run.transcript = ModelMessagesTypeAdapter.dump_python(
        [
            ModelResponse(parts=[ToolCallPart("write_plan", {"items": "x"}, "call-1")]),
            ModelRequest(parts=[retry]),
            ModelResponse(parts=[TextPart("Done.")]),
        ],
        mode="json",
    )
    run.save(update_fields=["transcript"])

    lines = [
        line for block in run_trace(run) if block["kind"] == "tools" for line in block["lines"]
    ]
    results = [line for line in lines if line["kind"] == "result"]

    assert [block["tool_name"] for block in results] == ["write_plan"]
    assert "items must be a list" in results[0]["content"]
