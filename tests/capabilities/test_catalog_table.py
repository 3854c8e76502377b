"""The registry against seed 000's table "Qué se entrega", kept here by hand.

The table below is written from the seed, not generated from the registry: a capability that
loses a tool, gains a scope or changes its voice mode fails here until someone decides which of
the two is wrong.
"""

import json

import pytest

from apps.capabilities.registry import (
    KNOWN_SCOPES,
    KeyRequirement,
    VoiceMode,
    all_capabilities,
    capability_payload,
    get_capability,
)

N, R, C = KeyRequirement.NONE, KeyRequirement.REQUIRED, KeyRequirement.CONDITIONAL
LIVE, HAND_OFF, NEVER = VoiceMode.LIVE, VoiceMode.HAND_OFF, VoiceMode.NEVER

# id: (category, tool ids, scopes, key requirement, voice)
SEED_TABLE = {
    "knowledge": ("knowledge", ("search_documents",), ("knowledge:read",), N, LIVE),
    "skills": ("knowledge", ("read_skill_resource",), ("knowledge:read",), N, LIVE),
    "context": ("knowledge", ("list_context", "read_context"), (), N, LIVE),
    "memory_files": (
        "knowledge",
        ("list_memory", "read_memory", "write_memory", "edit_memory", "delete_memory"),
        (),
        N,
        LIVE,
    ),
    "memory_mem0": ("knowledge", ("remember", "recall"), (), R, LIVE),
    "conversation_search": (
        "knowledge",
        ("search_conversations", "read_conversation"),
        ("conversations:read",),
        N,
        LIVE,
    ),
    "web_research": ("research", ("web_search",), ("web:read",), C, LIVE),
    "web_fetch": ("research", ("web_fetch",), ("web:fetch",), N, LIVE),
    "browser_use": (
        "research",
        (
            "browse_web",
            "browser_open",
            "browser_read",
            "browser_click",
            "browser_type",
            "browser_select",
            "browser_scroll",
            "browser_back",
        ),
        ("web:browse",),
        C,
        HAND_OFF,
    ),
    "code_execution": ("analysis", ("run_python",), ("code:execute",), N, LIVE),
    "sandbox": (
        "analysis",
        ("ls", "read_file", "glob", "grep", "write_file", "edit_file", "execute"),
        ("sandbox:execute",),
        C,
        HAND_OFF,
    ),
    "charts": ("analysis", ("create_chart",), (), N, LIVE),
    "visuals": ("analysis", ("draw", "revise_visual", "read_visual"), (), N, LIVE),
    "image_generation": ("analysis", ("generate_image",), (), R, LIVE),
    "text_to_speech": ("analysis", ("generate_speech",), (), R, LIVE),
    "video_generation": ("analysis", ("generate_video",), (), R, HAND_OFF),
    "coding_agent": ("analysis", ("run_coding_agent",), ("sandbox:execute",), R, HAND_OFF),
    "subagents": (
        "reasoning",
        (
            "task",
            "check_task",
            "wait_tasks",
            "list_active_tasks",
            "answer_subagent",
            "send_message_to_subagent",
            "soft_cancel_task",
            "hard_cancel_task",
            "create_agent",
            "delegate",
        ),
        ("agents:delegate",),
        N,
        HAND_OFF,
    ),
    "planning": (
        "reasoning",
        (
            "write_plan",
            "read_plan",
            "add_task",
            "update_task_status",
            "update_task_statuses",
            "remove_task",
            "add_subtask",
            "set_dependency",
            "get_available_tasks",
        ),
        (),
        N,
        LIVE,
    ),
    "thinking": ("reasoning", (), (), N, LIVE),
    "system_reminders": ("reasoning", (), (), N, NEVER),
    "tool_search": ("utility", (), (), N, NEVER),
    "clock": ("utility", (), (), N, LIVE),
    "guardrails": ("utility", (), (), N, LIVE),
    "compaction": ("utility", (), (), N, NEVER),
    "media": ("utility", (), (), N, NEVER),
    "tool_output_limits": ("utility", ("read_tool_result",), (), N, LIVE),
    "artifacts": ("utility", ("publish_artifact", "read_artifact"), (), N, LIVE),
    "channel_tools": (
        "channels",
        (
            "get_channel_info",
            "list_channel_members",
            "search_channels",
            "read_channel_history",
            "send_channel_file",
        ),
        (),
        N,
        NEVER,
    ),
    "ask_user": ("utility", ("ask_user_question",), (), N, LIVE),
    "follow_ups": ("utility", ("suggest_next_steps", "propose_setup"), (), N, NEVER),
}

# The five that only tune how a run is carried are folded under Advanced (seed 000).
ADVANCED = {"compaction", "media", "system_reminders", "tool_output_limits", "tool_search"}


def test_registry_lists_exactly_the_31_ids_of_the_seed_in_its_order():
    assert len(SEED_TABLE) == 31
    assert [c.id for c in all_capabilities()] == list(SEED_TABLE)


@pytest.mark.parametrize("cap_id", list(SEED_TABLE))
def test_capability_matches_the_seed_row(cap_id):
    category, tools, scopes, key, voice = SEED_TABLE[cap_id]
    cap = get_capability(cap_id)
    assert cap.category == category
    assert cap.tool_ids == tools
    assert cap.scopes == scopes
    assert cap.key_requirement is key
    assert cap.voice is voice
    assert cap.advanced is (cap_id in ADVANCED)


def test_the_seven_without_tools_declare_an_empty_tuple():
    toolless = {c.id for c in all_capabilities() if c.tools == ()}
    assert toolless == {
        "thinking",
        "system_reminders",
        "tool_search",
        "clock",
        "guardrails",
        "compaction",
        "media",
    }


def test_every_declared_scope_is_one_of_the_eight():
    declared = {s for c in all_capabilities() for s in c.scopes}
    assert declared == set(KNOWN_SCOPES)


def test_tool_ids_are_unique_across_the_registry():
    ids = [t.id for c in all_capabilities() for t in c.tools]
    assert len(ids) == len(set(ids)) == 69


def test_unknown_capability_is_a_key_error_naming_it():
    with pytest.raises(KeyError, match="no capability 'crystal_ball' is registered"):
        get_capability("crystal_ball")


def test_unknown_tool_is_a_key_error_naming_the_capability_tools():
    with pytest.raises(KeyError, match="declares no tool 'rm_rf'.*search_documents"):
        get_capability("knowledge").tool("rm_rf")


@pytest.mark.parametrize("cap", all_capabilities(), ids=lambda c: c.id)
def test_payload_is_json_and_carries_every_field_the_api_serves(cap):
    payload = json.loads(json.dumps(capability_payload(cap)))
    for key in (
        "id",
        "name",
        "category",
        "description",
        "tools",
        "scopes",
        "key_requirement",
        "voice",
        "recommended",
        "advanced",
        "available",
        "unavailable_reason",
        "config_schema",
    ):
        assert key in payload, key
    assert [t["id"] for t in payload["tools"]] == list(cap.tool_ids)
    for t in payload["tools"]:
        assert set(t) >= {"id", "description", "side_effecting"}
    assert payload["key_requirement"] in {"none", "required", "conditional"}
    assert payload["voice"] in {"live", "hand_off", "never"}
    assert payload["config_schema"]["type"] == "object"


# Built by issue 8 (apps/capabilities/tools/), ask_user by the approvals app, web_research and
# web_fetch by issue 16, knowledge by issue 17, memory by 18, subagents by 19
# (apps/runs/delegation.py), guardrails, tool_output_limits, compaction and system_reminders by
# issue 20, tool_search by 21; later issues add the others one by one.
BUILT = {
    "knowledge",
    "clock",
    "thinking",
    "planning",
    "charts",
    "code_execution",
    "context",
    "ask_user",
    "web_research",
    "web_fetch",
    "memory_files",
    "memory_mem0",
    "conversation_search",
    "guardrails",
    "tool_output_limits",
    "compaction",
    "system_reminders",
    # issue 20: no tools; the runner stores and restores a transcript's large parts (tools/media.py)
    "media",
    # issue 21: no tools of its own; it defers the MCP toolsets (apps/capabilities/tools/tool_search.py)
    "tool_search",
    "subagents",
    # issue 17: its tool comes with pydantic-ai-skills' capability (apps/capabilities/tools/skills.py)
    "skills",
    # issue 23: granted per chat binding, built in apps/capabilities/tools/channel_tools.py
    "channel_tools",
    # issue 34: its builder is registered by apps.sandbox (the app that owns workspaces)
    "sandbox",
}


@pytest.mark.parametrize(
    "cap", [c for c in all_capabilities() if c.id not in BUILT], ids=lambda c: c.id
)
def test_unbuilt_capability_says_so_in_the_api_and_its_description(cap):
    payload = capability_payload(cap)
    assert payload["available"] is False
    assert payload["unavailable_reason"] == "tools not built yet — declared and validated"
    assert "Not available yet" in payload["description"]


@pytest.mark.parametrize("cap_id", sorted(BUILT))
def test_built_capability_is_available_with_no_reason(cap_id):
    payload = capability_payload(get_capability(cap_id))
    assert payload["available"] is True
    assert payload["unavailable_reason"] == ""
    assert "Not available yet" not in payload["description"]


@pytest.mark.parametrize("cap", all_capabilities(), ids=lambda c: c.id)
def test_builder_description_says_what_examples_needs_and_never(cap):
    assert cap.name and cap.description
    assert 1 <= len(cap.examples) <= 3
    assert "For example:" in cap.description
    assert cap.needs and "Needs:" in cap.description
    assert cap.never and "Never:" in cap.description


def test_recommended_set_is_the_template_and_never_an_advanced_one():
    recommended = {c.id for c in all_capabilities() if c.recommended}
    assert {"ask_user", "follow_ups", "sandbox", "browser_use"} <= recommended
    assert not recommended & ADVANCED
    # Capabilities that need a key cannot be on a template a fresh organization receives.
    assert (
        not {c.id for c in all_capabilities() if c.key_requirement is KeyRequirement.REQUIRED}
        & recommended
    )


def test_every_default_config_validates():
    for cap in all_capabilities():
        assert cap.parse_config({}) == cap.parse_config(None)
        cap.parse_config(cap.default_config())  # the JSON defaults round-trip


def test_unknown_config_key_is_refused_naming_it():
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="top_k"):
        get_capability("knowledge").parse_config({"top_k": 3})
