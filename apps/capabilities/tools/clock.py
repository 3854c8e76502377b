"""clock: the current date and time in the agent's instructions, so it stops guessing them.

The failure it fixes is an agent reasoning confidently about "this quarter" from its training
cut-off. No tool and no model call: one line in the instructions, in the binding's IANA time zone
(default UTC; an unknown zone is refused by the config model, hence at publish). The line starts
"Current date and time:", which the offline model reads when asked for the time.
"""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

from ..run_context import RunResources
from ._toolsets import parsed_config

CAPABILITY_ID = "clock"


def clock_line(now: datetime, timezone_name: str) -> str:
    local = now.astimezone(ZoneInfo(timezone_name))
    offset = local.strftime("%z")
    offset = f"UTC{offset[:3]}:{offset[3:]}" if offset else "UTC"
    return (
        f"Current date and time: {local:%A, %Y-%m-%d %H:%M} ({timezone_name}, {offset}). "
        "Use it for anything that depends on today's date."
    )


def clock_instructions(binding, resources: RunResources) -> str:
    """``resources.now`` (an aware datetime) pins the moment, for tests; otherwise it is now."""
    config = parsed_config(CAPABILITY_ID, binding)
    now = resources.now or datetime.now(UTC)
    if now.tzinfo is None:
        now = now.replace(tzinfo=UTC)
    return clock_line(now, config.timezone)


def build_clock_toolset(binding, context):
    return None  # no tools, on purpose: the date goes into the instructions
