"""The tools of the built capabilities: clock, thinking, planning, charts, code_execution
("Calculations"), context, and the public web — web_research (``web_search``) and web_fetch. One
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
    from .charts import build_charts_toolset
    from .clock import build_clock_toolset
    from .context import build_context_toolset
    from .planning import build_planning_toolset
    from .thinking import build_thinking_toolset
    from .web_fetch import build_web_fetch_toolset
    from .web_search import build_web_search_toolset

    return {
        "clock": build_clock_toolset,
        "thinking": build_thinking_toolset,
        "planning": build_planning_toolset,
        "charts": build_charts_toolset,
        "code_execution": build_code_execution_toolset,
        "context": build_context_toolset,
        "web_research": build_web_search_toolset,
        "web_fetch": build_web_fetch_toolset,
    }


def register_toolsets() -> None:
    """Register every builder of this package, which makes their capabilities available
    (idempotent)."""
    global BUILDERS_REGISTERED
    for capability_id, builder in builders().items():
        register_toolset(capability_id, builder)
    BUILDERS_REGISTERED = True
