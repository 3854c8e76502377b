"""Approval resolution, provider-executed tools and offered tools."""

import pytest

from apps.capabilities.approval import (
    gated_provider_executed_tools,
    resolve_tool_approval,
    resolve_tool_approval_decision,
    unknown_tool_ids,
)
from apps.capabilities.registry import all_capabilities, get_capability

SIDE_EFFECTING = {
    "browse_web",
    "browser_click",
    "browser_type",
    "browser_select",
    "execute",
    "generate_image",
    "generate_speech",
    "generate_video",
    "run_coding_agent",
    "send_message_to_subagent",
    "soft_cancel_task",
    "hard_cancel_task",
    "send_channel_file",
}


def test_side_effecting_tools_are_the_declared_set():
    declared = {t.id for c in all_capabilities() for t in c.tools if t.side_effecting}
    assert declared == SIDE_EFFECTING


def test_sandbox_only_execute_acts_on_the_world():
    sandbox = get_capability("sandbox")
    assert [t.id for t in sandbox.tools if t.side_effecting] == ["execute"]


@pytest.mark.parametrize(
    ("cap_id", "tool_id", "binding", "overrides", "expected"),
    [
        # default falls through to side_effecting
        ("sandbox", "execute", "default", {}, True),
        ("sandbox", "write_file", "default", {}, False),
        # the binding's mode beats side_effecting, both ways
        ("sandbox", "write_file", "required", {}, True),
        ("sandbox", "execute", "never", {}, False),
        # the tool's own override beats the binding
        ("sandbox", "write_file", "default", {"write_file": "required"}, True),
        ("sandbox", "execute", "required", {"execute": "never"}, False),
        # an override on another tool changes nothing here
        ("sandbox", "read_file", "never", {"write_file": "required"}, False),
        # a per-tool "default" means the tool's own default: side_effecting
        ("sandbox", "execute", "never", {"execute": "default"}, True),
        # required works on a tool that only reads
        ("knowledge", "search_documents", "required", {}, True),
        ("planning", "write_plan", "default", {"write_plan": "required"}, True),
        ("subagents", "task", "default", {}, False),
        ("artifacts", "publish_artifact", "default", {}, False),
    ],
)
def test_resolution_order(cap_id, tool_id, binding, overrides, expected):
    cap = get_capability(cap_id)
    assert resolve_tool_approval(cap, tool_id, binding, overrides) is expected


def test_decision_says_where_it_came_from():
    sandbox = get_capability("sandbox")
    decision = resolve_tool_approval_decision(sandbox, "execute", "default", {})
    assert (decision.required, decision.source) == (True, "side_effects")
    decision = resolve_tool_approval_decision(sandbox, "ls", "default", {"ls": "required"})
    assert (decision.required, decision.source) == (True, "tool")
    assert decision.sentence == "Asks a person before every call (set on this tool)."


def test_resolution_is_keyed_by_the_stable_tool_id():
    cap = get_capability("knowledge")
    # A renamed tool (tool_overrides name) is still gated by its stable id; the visible name
    # is not an id and is refused.
    with pytest.raises(KeyError, match="search_refund_policy"):
        resolve_tool_approval(cap, "search_refund_policy", "default", {})
    assert unknown_tool_ids(cap, {"search_refund_policy": "required"}) == ["search_refund_policy"]
    assert unknown_tool_ids(cap, ["search_documents"]) == []


def test_unknown_approval_mode_is_refused():
    with pytest.raises(ValueError, match="always"):
        resolve_tool_approval(get_capability("sandbox"), "ls", "always", {})
    with pytest.raises(ValueError, match=r"tool_approval\['ls'\]"):
        resolve_tool_approval(get_capability("sandbox"), "ls", "default", {"ls": "yes"})


@pytest.mark.parametrize(
    ("cap_id", "tool_id", "config", "expected"),
    [
        ("web_research", "web_search", {"method": "native"}, True),
        ("web_research", "web_search", {"method": "duckduckgo"}, False),
        ("web_research", "web_search", {"method": "tavily"}, False),
        ("web_research", "web_search", None, False),
        ("web_fetch", "web_fetch", {"method": "native"}, True),
        ("web_fetch", "web_fetch", {"method": "auto"}, True),
        ("web_fetch", "web_fetch", {"method": "local"}, False),
        ("web_fetch", "web_fetch", None, False),
        ("sandbox", "execute", {"backend": "service"}, False),
    ],
)
def test_provider_executed(cap_id, tool_id, config, expected):
    spec = get_capability(cap_id).tool(tool_id)
    assert spec.is_provider_executed(config) is expected


def test_only_web_search_and_web_fetch_can_be_provider_executed():
    can = {t.id for c in all_capabilities() for t in c.tools if t.provider_executed_when}
    assert can == {"web_search", "web_fetch"}


def test_required_approval_on_a_provider_executed_tool_is_found():
    fetch = get_capability("web_fetch")
    assert gated_provider_executed_tools(fetch, {"method": "auto"}, "required") == ["web_fetch"]
    assert gated_provider_executed_tools(fetch, {"method": "local"}, "required") == []
    assert gated_provider_executed_tools(fetch, {"method": "native"}, "default") == []
    search = get_capability("web_research")
    assert gated_provider_executed_tools(
        search, {"method": "native"}, "default", {"web_search": "required"}
    ) == ["web_search"]


def test_key_requirement_follows_the_config():
    assert get_capability("web_research").needs_key({"method": "brave"}) is True
    assert get_capability("web_research").needs_key({"method": "duckduckgo"}) is False
    assert get_capability("browser_use").needs_key(
        {"connection": "hosted", "hosted_url": "wss://b.example"}
    )
    assert get_capability("browser_use").needs_key(None) is False
    assert get_capability("image_generation").needs_key(None) is True
    assert get_capability("planning").needs_key(None) is False


def _offered(cap_id, config=None):
    return [t.id for t in get_capability(cap_id).offered_tools(config)]


def test_delegation_offers_lifecycle_tools_only_when_a_background_delegation_is_reachable():
    assert _offered("subagents") == ["task"]
    assert "check_task" in _offered("subagents", {"mode": "async"})
    with_dynamic = _offered("subagents", {"allow_dynamic": True})
    assert {"create_agent", "delegate", "wait_tasks"} <= set(with_dynamic)
    assert len(with_dynamic) == 9  # ten declared, answer_subagent offered to no model
    inline = {
        "inline": [{"name": "researcher", "description": "d", "instructions": "i", "mode": "async"}]
    }
    assert "wait_tasks" in _offered("subagents", inline)


def test_planning_subtask_tools_need_enable_subtasks():
    assert len(_offered("planning")) == 6
    assert len(_offered("planning", {"enable_subtasks": True})) == 9


def test_execute_is_offered_only_with_a_shell():
    assert "execute" not in _offered("sandbox")
    assert "execute" in _offered("sandbox", {"backend": "service"})
    assert "execute" not in _offered("sandbox", {"backend": "service", "include_execute": False})


def test_channel_tools_grant_nothing_by_default():
    # send_channel_file is declared and never offered until a run has a workspace to send from.
    assert _offered("channel_tools") == []
    assert _offered("channel_tools", {"tools": ["read_channel_history"]}) == [
        "read_channel_history",
    ]
