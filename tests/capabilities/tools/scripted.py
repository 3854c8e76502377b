"""The runner's own prepare() and drive() with the provider replaced by a scripted FunctionModel:
for shapes the offline model cannot produce (reasoning, a chain of calls that reads an earlier
result), still through the run's real capabilities, guard, stream and frames."""

from __future__ import annotations

from asgiref.sync import async_to_sync
from pydantic_ai.messages import TextPart, ToolCallPart
from pydantic_ai.models.function import DeltaToolCall, FunctionModel

from apps.runs.events import FramePublisher, frames_after
from apps.runs.runner import DriveState, drive, outcome_of, prepare


def streamed(function):
    """A stream function answering what ``function`` (messages, info) -> ModelResponse answers:
    the runner streams every request."""

    async def stream(messages, info):
        response = function(messages, info)
        calls = [p for p in response.parts if isinstance(p, ToolCallPart)]
        if calls:
            yield {
                index: DeltaToolCall(
                    name=c.tool_name, json_args=c.args_as_json_str(), tool_call_id=c.tool_call_id
                )
                for index, c in enumerate(calls)
            }
            return
        yield "".join(p.content for p in response.parts if isinstance(p, TextPart))

    return stream


def drive_scripted(run, *, function=None, stream_function=None):
    """(outcome, frames, state) of ``run`` driven on the scripted model."""
    if stream_function is None:
        stream_function = streamed(function)
    prepared = prepare(run)
    frames = FramePublisher(run.pk)
    state = DriveState()
    failure = None
    model = FunctionModel(function, stream_function=stream_function)

    async def go():
        with prepared.agent.override(model=model):
            await drive(prepared, frames, state)

    try:
        async_to_sync(go)()
    except Exception as exc:  # the outcome is what the tests assert on
        failure = exc
    frames.close()
    return outcome_of(failure, prepared), frames_after(run.pk), state
