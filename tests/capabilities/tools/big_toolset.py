"""A harmless toolset whose results can be made as large as a test needs: ``echo`` and
``repeat`` (a line ``times`` times, one per line, numbered), registered for the ``planning``
binding like ``tests.runs.toolsets.echo_toolset`` and restored afterwards."""

from __future__ import annotations

import pytest
from pydantic_ai.toolsets import FunctionToolset

from apps.capabilities.implementations import register_toolset, toolset_builder, unregister_toolset

BIG_CAPABILITY = "planning"


def build_big_toolset(binding, context) -> FunctionToolset:
    toolset = FunctionToolset(id=f"test-big-{context.run_id}")

    @toolset.tool_plain
    def echo(text: str) -> str:
        """Repeat the text back."""
        return f"echo: {text}"

    @toolset.tool_plain
    def repeat(text: str, times: int) -> str:
        """The text on ``times`` numbered lines."""
        return "\n".join(f"{n:06d} {text}" for n in range(1, times + 1))

    return toolset


@pytest.fixture
def big_toolset():
    previous = toolset_builder(BIG_CAPABILITY)
    register_toolset(BIG_CAPABILITY, build_big_toolset)
    yield BIG_CAPABILITY
    if previous is None:
        unregister_toolset(BIG_CAPABILITY)
    else:
        register_toolset(BIG_CAPABILITY, previous)
