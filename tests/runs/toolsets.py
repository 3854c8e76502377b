"""A real, harmless toolset for tests: `echo` and `ping`, registered for the `planning` binding
(whose own tools are not built yet), and restored afterwards."""

from __future__ import annotations

import asyncio

import pytest
from pydantic_ai.toolsets import FunctionToolset

from apps.capabilities.implementations import (
    register_toolset,
    toolset_builder,
    unregister_toolset,
)
from apps.runs.offline import HARMLESS_TOOL_METADATA

TEST_CAPABILITY = "planning"
# Set by the `slow_ping` fixture, so a run stays running long enough to be cancelled.
PING_DELAY_SECONDS = 0.0


def build_echo_toolset(binding, context) -> FunctionToolset:
    toolset = FunctionToolset(id=f"test-echo-{context.run_id}")

    @toolset.tool_plain
    def echo(text: str) -> str:
        """Repeat the text back."""
        return f"echo: {text}"

    @toolset.tool_plain(metadata={HARMLESS_TOOL_METADATA: True})
    async def ping() -> str:
        """Answer pong; safe to call any time."""
        if PING_DELAY_SECONDS:
            await asyncio.sleep(PING_DELAY_SECONDS)
        return "pong"

    return toolset


@pytest.fixture
def echo_toolset():
    previous = toolset_builder(TEST_CAPABILITY)
    register_toolset(TEST_CAPABILITY, build_echo_toolset)
    yield TEST_CAPABILITY
    if previous is None:
        unregister_toolset(TEST_CAPABILITY)
    else:
        register_toolset(TEST_CAPABILITY, previous)


@pytest.fixture
def slow_ping(echo_toolset):
    global PING_DELAY_SECONDS
    PING_DELAY_SECONDS = 0.2
    yield echo_toolset
    PING_DELAY_SECONDS = 0.0
