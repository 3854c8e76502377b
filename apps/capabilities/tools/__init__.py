"""The tools of the built capabilities: clock, thinking, planning, charts, code_execution
("Calculations"), context, memory_files, memory_mem0, conversation_search, and the public web — web_research (``web_search``) and web_fetch. One
module per capability; ``failures`` decides how every tool reports trouble; ``contributions`` holds
what they add besides tools; ``sources`` what a web tool leaves for the console's source cards.

:func:`register_toolsets` (called from the capabilities AppConfig's ``ready()``) registers one
builder per capability with ``implementations.register_toolset``. A builder is
``builder(binding, ToolsetContext) -> toolset | None`` and reads what the run resolved beforehand
from ``ToolsetContext.resources`` (``apps/capabilities/run_context.py``: one typed
``RunResources`` per run, shared by every builder and by ``contributions`` so planning's tools
and its reminder edit one plan) — a tool never reaches the database itself.
"""

from __future__ import annotations

from ..implementations import register_toolset

BUILDERS_REGISTERED = False


def builders() -> dict:
    from .calculations import build_code_execution_toolset
    from .channel_tools import build_channel_tools_toolset
    from .charts import build_charts_toolset
    from .clock import build_clock_toolset
    from .compaction import build_compaction_toolset
    from .context import build_context_toolset
    from .conversation_search import build_conversation_search_toolset
    from .guardrails import build_guardrails_toolset
    from .knowledge import build_knowledge_toolset
    from .media import build_media_toolset
    from .mem0 import build_memory_mem0_toolset
    from .memory_files import build_memory_files_toolset
    from .planning import build_planning_toolset
    from .skills import build_skills_toolset
    from .system_reminders import build_system_reminders_toolset
    from .thinking import build_thinking_toolset
    from .tool_output_limits import build_tool_output_limits_toolset
    from .tool_search import build_tool_search_toolset
    from .web_fetch import build_web_fetch_toolset
    from .web_search import build_web_search_toolset

    return {
        "clock": build_clock_toolset,
        "thinking": build_thinking_toolset,
        "planning": build_planning_toolset,
        "charts": build_charts_toolset,
        "code_execution": build_code_execution_toolset,
        "context": build_context_toolset,
        "memory_files": build_memory_files_toolset,
        "memory_mem0": build_memory_mem0_toolset,
        "conversation_search": build_conversation_search_toolset,
        "knowledge": build_knowledge_toolset,
        "web_research": build_web_search_toolset,
        "web_fetch": build_web_fetch_toolset,
        "guardrails": build_guardrails_toolset,
        "compaction": build_compaction_toolset,
        "system_reminders": build_system_reminders_toolset,
        "tool_output_limits": build_tool_output_limits_toolset,
        # No tools: the runner stores a history's large parts through it (apps/runs/media.py).
        "media": build_media_toolset,
        # No tools: its ToolSearch capability is in contributions; the runner defers MCP tools.
        "tool_search": build_tool_search_toolset,
        # No toolset of its own: the skills and read_skill_resource come with its capability.
        "skills": build_skills_toolset,
        # Granted per chat binding (apps.channels), never in a spec; nothing outside a channel.
        "channel_tools": build_channel_tools_toolset,
    }


def register_toolsets() -> None:
    """Register every builder of this package, which makes their capabilities available
    (idempotent)."""
    global BUILDERS_REGISTERED
    for capability_id, builder in builders().items():
        register_toolset(capability_id, builder)
    BUILDERS_REGISTERED = True
