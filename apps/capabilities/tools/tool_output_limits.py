"""tool_output_limits: an oversized tool return is reduced once, when produced, and the reduced
form is what persists — instead of being resent whole with every later request of the run.

The reduction is pydantic-ai-harness's ``ToolOutputLimits``; an author picks one ``action`` at one
``threshold`` (the Builder's form cannot draw the harness's nested list of size bands):

- ``spill`` (default, the only lossless one): the full return is written to the agent's backend
  under ``tool_output/`` and replaced by a handle, a preview and a sketch of its shape; the model
  reads slices back with ``read_tool_result(handle, offset, limit, from_end, pattern)``. A spill
  the backend refuses falls back to a truncation rather than vanishing.
- ``truncate``: the cheap, lossy cut (``head`` / ``tail`` / ``head_tail``) with a marker saying
  what was cut.
- ``summarize``: a model's summary, on the run's own model, booked to the run's ledger
  (:mod:`.ambient`); a summary that fails falls back to a spill, then to a truncation.

A spill never outlives its run. An agent without a workspace gets :class:`RunSpillStore`, in
memory, built for the run and dropped with it, so nothing is written to shared disk; the sandbox
will hand its own workspace in through ``RunResources.tool_output_store`` when it exists.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic_ai import RunContext
from pydantic_ai_harness.tool_output_limits import (
    Band,
    Spill,
    Summarize,
    ToolOutputLimits,
    Truncate,
    TruncationStrategy,
)
from pydantic_ai_harness.tool_output_limits._capability import _DEFAULT_SUMMARY_PROMPT, _read_slice

from ..run_context import RunResources
from ._toolsets import TOOL_ID_METADATA, binding_overrides, declared_toolset, parsed_config
from .ambient import measured
from .failures import WrongArguments, budgeted

CAPABILITY_ID = "tool_output_limits"
READ_TOOL_ID = "read_tool_result"
SPILL_PREFIX = "tool_output/"
# What one run may hold in memory; a spill beyond it falls back to a truncation.
RUN_SPILL_MAX_BYTES = 64 * 1024 * 1024
CHARS_PER_TOKEN = 4
SUMMARY_LEDGER_KIND = "compaction"


class SpillRefused(OSError):
    """The store will not take this spill (the run's allowance is spent)."""


@dataclass
class RunSpillStore:
    """The spills of one run, in memory, under ``tool_output/``; gone when the run is."""

    max_bytes: int = RUN_SPILL_MAX_BYTES
    _blobs: dict[str, bytes] = field(default_factory=dict)

    @property
    def used_bytes(self) -> int:
        return sum(len(blob) for blob in self._blobs.values())

    async def write(self, key: str, data: bytes) -> str:
        if self.used_bytes + len(data) > self.max_bytes:
            raise SpillRefused(f"the run's spills would exceed {self.max_bytes:,} bytes")
        handle = SPILL_PREFIX + key
        self._blobs[handle] = data
        return handle

    async def read(self, handle: str) -> bytes:
        try:
            return self._blobs[handle]
        except KeyError:
            raise FileNotFoundError(handle) from None

    def handles(self) -> list[str]:
        return list(self._blobs)

    def __contains__(self, handle: object) -> bool:
        return handle in self._blobs


def run_store(resources: RunResources) -> RunSpillStore:
    """The run's store (the runner resolves one; made on first use otherwise): the builder and
    the capability share it."""
    if resources.tool_output_store is None:
        resources.tool_output_store = RunSpillStore()
    return resources.tool_output_store


def _band(config) -> Band:
    strategy = TruncationStrategy(config.truncation_strategy)
    threshold_chars = config.threshold * (CHARS_PER_TOKEN if config.over_tokens else 1)
    # Left unset, a truncation never keeps more than the threshold itself.
    max_chars = (
        config.max_chars
        if "max_chars" in config.model_fields_set
        else min(config.max_chars, threshold_chars)
    )
    truncate = Truncate(strategy=strategy, max_chars=max_chars)
    action: Truncate | Summarize | Spill
    if config.action == "truncate":
        action = truncate
    elif config.action == "summarize":
        action = Summarize(then=Spill(then=truncate))
    else:
        action = Spill(then=truncate)
    return Band(over=config.threshold, action=action)


@dataclass
class RunToolOutputLimits(ToolOutputLimits):
    """The harness's reduction over this run's store, with the registry's ``read_tool_result``.

    The read-back tool is the registry's (renamable, approvable, described like every other
    tool), so the harness's own is not registered; its returns are never reduced again."""

    read_tool_name: str = READ_TOOL_ID

    def get_toolset(self):
        return None  # read_tool_result comes from the builder (build_tool_output_limits_toolset)

    def _read_hint(self, ctx, handle: str) -> str:
        return (
            f" Read it with {self.read_tool_name}(handle={handle!r}, offset=0, limit=200, "
            "from_end=False, pattern=None)."
        )

    async def after_tool_execute(self, ctx: RunContext[Any], *, call, tool_def, args, result):
        if (tool_def.metadata or {}).get(TOOL_ID_METADATA) == READ_TOOL_ID:
            return result  # a slice of a spill is never spilled again
        # A summary is written by an agent the harness builds, outside the budget guard: the
        # usage it adds to the run's is booked to the run's ledger.
        async with measured(ctx.usage, kind=SUMMARY_LEDGER_KIND):
            return await super().after_tool_execute(
                ctx, call=call, tool_def=tool_def, args=args, result=result
            )


def tool_output_limits_capabilities(binding, resources: RunResources) -> list[Any]:
    config = parsed_config(CAPABILITY_ID, binding)
    override = binding_overrides(binding).get(READ_TOOL_ID)
    renamed = (
        (override.get("name") if isinstance(override, dict) else getattr(override, "name", None))
        if override
        else None
    )
    return [
        RunToolOutputLimits(
            bands=[_band(config)],
            over_tokens=config.over_tokens,
            strip_ansi=config.strip_ansi,
            summary_prompt=config.summary_prompt or _DEFAULT_SUMMARY_PROMPT,
            store=run_store(resources),
            read_tool_name=renamed or READ_TOOL_ID,
        )
    ]


def build_tool_output_limits_toolset(binding, context):
    store = run_store(context.resources)

    @budgeted
    async def read_tool_result(
        ctx: RunContext[Any],
        handle: str,
        offset: int = 0,
        limit: int = 200,
        from_end: bool = False,
        pattern: str | None = None,
    ) -> str:
        if handle not in store:
            raise WrongArguments(
                f"No stored tool result for handle {handle!r}. Use the exact handle of a "
                "'[Tool output too large ...; stored to handle ...]' marker of this run; a "
                "result spilled by an earlier run is gone, so run its tool again."
            )
        if offset < 0 or limit < 1:
            raise WrongArguments("offset must be 0 or more and limit 1 or more.")
        return await _read_slice(store.read, handle, offset, limit, from_end, pattern)

    return declared_toolset(
        CAPABILITY_ID,
        binding,
        {READ_TOOL_ID: read_tool_result},
        toolset_id=f"{CAPABILITY_ID}-{context.run_id}",
    )


__all__ = [
    "RunSpillStore",
    "RunToolOutputLimits",
    "SpillRefused",
    "build_tool_output_limits_toolset",
    "run_store",
    "tool_output_limits_capabilities",
]
