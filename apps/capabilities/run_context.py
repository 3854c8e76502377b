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

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .tools.conversation_search import ConversationAccess
    from .tools.knowledge import DocumentSearcher
    from .tools.mem0 import Mem0Access
    from .tools.memory_files import MemoryAccess
    from .tools.planning import RunPlan
    from .tools.skills import SkillSnapshot
    from .tools.system_reminders import ReminderCounters
    from .tools.tool_output_limits import RunSpillStore


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
    # memory_files: the one store this run reaches, decided from who hears the answer
    # (``apps.memory.selectors.memory_for_run``); None: the capability is not bound.
    memory: MemoryAccess | None = None
    # memory_mem0: the same scope as mem0's user_id (``apps.memory.selectors.mem0_for_run``).
    mem0: Mem0Access | None = None
    # conversation_search: the person's corpus, or why there is none
    # (``apps.runs.search.conversations_for_run``).
    conversations: ConversationAccess | None = None
    # knowledge: the searcher of the spec's collections, read in the run's organization
    # (``apps.knowledge.selectors.collection_search_for_run``); None: the capability attaches
    # nothing.
    knowledge: DocumentSearcher | None = None
    # skills: the bound skills' snapshots (``apps.knowledge.selectors.skills_for_run``), in the
    # spec's order; empty: the capability attaches nothing.
    skills: list[SkillSnapshot] = field(default_factory=list)
    # tool_output_limits: where this run's spills go (``tool_output/…``), shared by the reducing
    # capability and read_tool_result. In memory and dropped with the run for an agent without a
    # workspace; the sandbox will put its workspace-backed store here.
    tool_output_store: RunSpillStore | None = None
    # compaction: the window of the run's model as its profile (or the price registry) knows it,
    # None when unknown; and where the strategy tells the run that a summary starts, ends or
    # cannot help (the runner sends each as a ``compaction`` frame while the run streams).
    model_context_window: int | None = None
    on_compaction: Callable[[dict[str, Any]], None] | None = None
    # system_reminders: the conversation's cadence counters (seeded from the conversation, written
    # back when the run stops), so a reminder every ten requests goes on counting across turns.
    reminder_counters: ReminderCounters | None = None
    # subagents: this agent's delegates and its place in the run's delegation tree
    # (``apps.runs.delegation.DelegationScopeAt``); None when it delegates to nobody, or is at
    # the depth limit (then it is built without delegation).
    delegation: Any = None
    # media: the binding's threshold_bytes, when the agent binds it: the parts of the stored
    # transcript this large go to storage (apps/runs/media.py). None keeps them inline.
    media_threshold_bytes: int | None = None
    # channel_tools: the channel the message arrived in, bound to the bot's own token
    # (``apps.channels.assembly``); None outside a channel, and then nothing attaches.
    channel: Any = None
    # sandbox: the run's workspace, opened before the run from the binding's session_scope
    # (``apps.sandbox.services.workspace_open_for_run``); None: the capability is not bound.
    sandbox: Any = None


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
