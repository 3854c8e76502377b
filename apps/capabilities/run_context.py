"""What a capability's code is handed for one run: the typed run context.

A capability's tools never reach into the database on their own (STYLE.md): the runner resolves
what they need before the run — the plan, the bound context files, later the collections, the
memory store, the sandbox — and hands it over here. :class:`RunResources` is that resolution, one
object per run shared by every builder and every contribution (planning's tools and its reminder
edit the same plan); :class:`ToolsetContext` is what one binding's builder receives: who the run
is, the binding's decrypted key, and the run's resources.

A capability that needs something new adds a typed field to :class:`RunResources` and the line
in ``apps/runs/runner.py`` (``resolve_resources``) that fills it; a key nobody declared is an
``AttributeError``, not a silent ``None``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .tools.planning import RunPlan


@dataclass
class RunResources:
    """What the runner resolved for the run's capabilities, before its first request."""

    # planning: the run's plan (``planning.seed_plan``), read back when the run stops; None
    # until the planning capability opens one (``planning.plan_store``).
    plan: RunPlan | None = None
    # context: the bound files (``apps.memory.selectors.context_files_for_run``): objects or
    # dicts with ``name``, ``body``, ``mode`` (``tools/context.as_document`` reads either).
    context_files: list[Any] = field(default_factory=list)
    # charts: when a list, ``create_chart`` appends each chart it draws (tests read it).
    artifacts: list[dict[str, Any]] | None = None
    # clock: an aware datetime pinning the moment (tests); None means now.
    now: datetime | None = None
    # subagents: this agent's delegates and its place in the run's delegation tree
    # (``apps.runs.delegation.DelegationScopeAt``); None when it delegates to nobody, or is at
    # the depth limit (then it is built without delegation).
    delegation: Any = None


@dataclass(frozen=True)
class ToolsetContext:
    """What a binding's builder may use: resolved before the run, never fetched by a tool."""

    organization_id: int
    agent_id: int
    run_id: int
    user_id: int | None
    surface: str
    # Decrypted key of the binding's secret, when it has one (kept out of logs and frames).
    secret_value: str | None = None
    resources: RunResources = field(default_factory=RunResources)
