"""The approval gate: a pydantic-ai capability around every tool execution, and the session
approval-mode check ``prepare()`` runs.

Where a decision is made (seed 003, "Aprobaciones"):

- ``follow`` (default): the spec decides, by stable tool id (``apps.agents.manifest.approval_required``:
  the tool's override, else the binding's mode, else ``side_effecting``). A tool outside any
  capability (no ``agenticos_tool_id``, e.g. MCP) is left alone: its approval is its connection's.
- ``ask_all``: every tool the agent can reach is gated, including ones the spec left ungated and
  ones outside any capability — except ``ask_user_question``, which already asks the person.
- ``approve_all``: what the spec gates runs without parking, and each call is remembered so a
  standing row (approved, the consenting account, ``decided_via = standing``) is written when the
  run stops.

A gated call on a surface with nobody to ask (schedule, webhook, embed, event, a chat channel)
is answered with a refusal the model relays — never a silent park. Otherwise the gate raises
``ApprovalRequired``; the run ends with ``DeferredToolRequests`` and ``parking.park_run`` writes
the rows. A resumed, approved call arrives with ``ctx.tool_call_approved`` and executes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.exceptions import ApprovalRequired

from apps.capabilities.registry import get_capability
from apps.capabilities.tool_view import seen_tool
from apps.capabilities.tools._toolsets import CAPABILITY_METADATA, TOOL_ID_METADATA
from apps.mcp.client import MCP_CONNECTION_ID_METADATA, MCP_TOOL_METADATA
from apps.orgs.permissions import APPROVALS_DECIDE, has_org_permission

from .choices import ApprovalMode

ASK_TOOL_NAME = "ask_user_question"
# Tool search's local tool only reveals other tools (pydantic-ai's ToolSearch): asking a person
# before a search would gate discovery, not an action; what it finds is gated when it is called.
SEARCH_TOOL_NAME = "search_tools"

# Surfaces where a person can be asked to decide: the console's chat, the API caller, the
# widget's visitor, a voice call, and a chat channel's thread (the run parks and the thread
# links to the approvals queue: apps.channels). Everything else is unattended (seed 003:
# "ApprovalGate ya rechaza un run sin nadie a quien preguntar").
CHANNEL_SURFACES = frozenset({"slack", "telegram", "mattermost"})
APPROVAL_SURFACES = frozenset({"chat", "api", "widget", "voice"}) | CHANNEL_SURFACES
# Where someone can answer a question card (seed 000: a schedule, a webhook, the API get
# "the person declined"). A channel's thread can, when its sender is a linked person: only the
# person asked may answer, and an unlinked sender is nobody here.
QUESTION_SURFACES = frozenset({"chat", "voice"}) | CHANNEL_SURFACES
# Only a web chat session may waive approvals (seed 003: "Ningún canal sigue significando no").
WAIVER_SURFACES = frozenset({"chat"})

NOBODY_TO_ASK = (
    "This call of {tool} needs a person's approval, and nobody can approve it here (the run came "
    "from {surface}), so it was not made. Tell the person it needs approval: start it from the "
    "console chat or the API, or ask an admin to change the agent's approval setting."
)


class ApprovalModeRefused(Exception):
    """The session asked for a mode it may not have; the sentence says why (the turn is refused)."""

    def __init__(self, sentence: str) -> None:
        self.sentence = sentence
        super().__init__(sentence)


def check_approval_mode(run) -> str:
    """Refuse, never degrade: a mode the session may not have fails the turn with a sentence."""
    mode = run.approval_mode or ApprovalMode.FOLLOW
    if mode not in ApprovalMode.values:
        raise ApprovalModeRefused(
            f"{mode!r} is not an approval mode (use follow, approve_all or ask_all)."
        )
    if mode != ApprovalMode.APPROVE_ALL:
        return mode
    if run.surface not in WAIVER_SURFACES:
        raise ApprovalModeRefused(
            "Only a web chat session may approve everything; this run came from "
            f"{run.surface}, so the turn was not run."
        )
    if run.user is None or not has_org_permission(run.user, run.organization, APPROVALS_DECIDE):
        raise ApprovalModeRefused(
            "Approving everything needs the approvals:decide permission, which you do not have, "
            "so the turn was not run. Choose “Follow the agent” or “Ask about everything”."
        )
    if not run.organization.chat_may_waive_approvals:
        raise ApprovalModeRefused(
            "This organization does not let a chat approve everything (its “chat may waive "
            "approvals” setting is off), so the turn was not run. Choose “Follow the agent” or "
            "“Ask about everything”."
        )
    return mode


@dataclass
class WaivedCall:
    tool_call_id: str
    tool_name: str
    tool_id: str
    capability_id: str
    arguments: dict


@dataclass
class ApprovalGate(AbstractCapability[Any]):
    """Holds a gated call for a person; see the module docstring for who decides what."""

    spec: Any
    mode: str
    surface: str
    # Waived calls of an approve-everything session, written as standing rows when the run stops
    # (not here: the calls run concurrently and the run's DB session is not safe for that).
    waived: list[WaivedCall] = field(default_factory=list)
    # Whether the spec binds ask_user. Its tool is contributed here (a capability's own toolset:
    # AskUser's events may only be emitted from a capability-contributed tool).
    asks_user: bool = False
    # Set for a delegate running in the background: nobody is left to write the question to
    # (the delegating tool call returned long ago), so a gated call is refused with this sentence
    # instead of parking (seed 000, "Delegación").
    refuse_with: str | None = None
    # False when the run answers nobody who could answer a question (an unlinked channel sender).
    has_asker: bool = True

    def get_toolset(self):
        if not self.asks_user:
            return None
        overrides = next(
            (b.tool_overrides for b in self.spec.enabled_bindings() if b.id == "ask_user"), None
        )
        return build_ask_user_toolset(
            self.surface if self.has_asker else "webhook", overrides=overrides
        )

    def has_work(self) -> bool:
        """Whether this run gives the gate anything to do: the question tool to contribute, every
        call to hold (ask_all), or a tool its spec gates. When not, the runner leaves the gate out
        of the agent: every capability costs each hook of each request (docs/runner.md)."""
        if self.asks_user or self.mode == ApprovalMode.ASK_ALL:
            return True
        from apps.capabilities.registry import get_capability

        return any(
            self._spec_gates(tool_id)
            for binding in self.spec.enabled_bindings()
            for tool_id in get_capability(binding.id).tool_ids
        )

    def _spec_gates(self, tool_id: str | None) -> bool:
        if not tool_id:
            return False
        from apps.agents.manifest import approval_required

        try:
            return approval_required(self.spec, tool_id)
        except KeyError:  # a tool this deployment builds outside the spec's bindings
            return False

    def gated(self, tool_def) -> bool:
        if tool_def.name in (ASK_TOOL_NAME, SEARCH_TOOL_NAME):
            return False
        if self.mode == ApprovalMode.ASK_ALL:
            return True
        return self._spec_gates((tool_def.metadata or {}).get(TOOL_ID_METADATA))

    async def wrap_tool_execute(self, ctx, *, call, tool_def, args, handler):
        if ctx.tool_call_approved or not self.gated(tool_def):
            return await handler(args)
        metadata = tool_def.metadata or {}
        tool_id = metadata.get(TOOL_ID_METADATA, "")
        capability_id = metadata.get(CAPABILITY_METADATA, "")
        if MCP_CONNECTION_ID_METADATA in metadata:
            # Only ask_all reaches here for an MCP tool: its row names the server's own tool name
            # and the connection ("mcp:<id>"), never a registry tool id it could be mistaken for.
            tool_id = str(metadata.get(MCP_TOOL_METADATA, ""))
            capability_id = f"mcp:{metadata[MCP_CONNECTION_ID_METADATA]}"
        if self.mode == ApprovalMode.APPROVE_ALL:
            self.waived.append(
                WaivedCall(
                    call.tool_call_id, call.tool_name, tool_id, capability_id, dict(args or {})
                )
            )
            return await handler(args)
        if self.refuse_with is not None:
            return self.refuse_with.format(tool=call.tool_name)
        if self.surface not in APPROVAL_SURFACES:
            return NOBODY_TO_ASK.format(tool=call.tool_name, surface=self.surface)
        raise ApprovalRequired(metadata={"tool_id": tool_id, "capability_id": capability_id})


def gate_for_run(run, spec) -> ApprovalGate:
    """The run's gate, after the approval-mode check (``ApprovalModeRefused`` refuses the turn)."""
    asks_user = any(binding.id == "ask_user" for binding in spec.enabled_bindings())
    return ApprovalGate(
        spec=spec,
        mode=check_approval_mode(run),
        surface=run.surface,
        asks_user=asks_user,
        has_asker=run.surface not in CHANNEL_SURFACES or run.user_id is not None,
    )


# --- ask_user ------------------------------------------------------------------------------------


def build_ask_user_toolset(surface: str, overrides=None):
    """``ask_user_question`` from pydantic-ai-harness ``AskUser``: deferred (the run parks
    ``awaiting_answer``) where someone can answer, "the person declined" everywhere else. The
    model reads the registry's description (or the binding's re-description), the text
    ``tools ls`` lists (apps.capabilities.tool_view), not the library's own."""
    from pydantic_ai_harness.ask_user import AskUserResponse, AskUserToolset

    async def nobody_answers(request):
        return AskUserResponse(cancelled=True)

    answerer = None if surface in QUESTION_SURFACES else nobody_answers
    toolset = AskUserToolset(answerer=answerer)
    tool = toolset.tools[ASK_TOOL_NAME]
    tool.description = seen_tool(
        get_capability("ask_user").tool(ASK_TOOL_NAME), overrides
    ).description
    tool.metadata = {
        **(tool.metadata or {}),
        TOOL_ID_METADATA: ASK_TOOL_NAME,
        CAPABILITY_METADATA: "ask_user",
    }
    return toolset


def _ask_user_binding_builder(binding, context):
    # The tool comes from the gate (ApprovalGate.get_toolset); registering a builder that adds
    # nothing keeps the binding out of PreparedRun.unbuilt_capabilities.
    return None


def register_ask_user_toolset() -> None:
    from apps.capabilities.implementations import register_toolset

    register_toolset("ask_user", _ask_user_binding_builder)
