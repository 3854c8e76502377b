"""The drift test for the six capabilities built here, and the one shape of a tool's text.

Declared tools equal the tools offered to the model under every config that changes the set; the
offered set is read from what a real model request carries, not from the toolset object.
"""

import pytest

from apps.capabilities.implementations import toolset_builder
from apps.capabilities.registry import get_capability
from apps.capabilities.tool_text import has_tool_text_shape, split_tool_text
from apps.capabilities.tools import builders
from apps.capabilities.tools._toolsets import TOOL_ID_METADATA

from .helpers import build, call, run_agent, tool_returns, toolset_context

LINKED = [{"name": "Escalation matrix", "body": "Billing → Ana", "mode": "link"}]
INJECTED = [{"name": "Glossary", "body": "ARR: annual recurring revenue", "mode": "inject"}]

# (capability, config, resources): every configuration (and resolved input) that changes the set.
CASES = [
    ("clock", {}, {}),
    ("clock", {"timezone": "Europe/Warsaw"}, {}),
    ("thinking", {}, {}),
    ("thinking", {"effort": "max"}, {}),
    ("planning", {}, {}),
    ("planning", {"enable_subtasks": True}, {}),
    ("charts", {}, {}),
    ("code_execution", {}, {}),
    ("code_execution", {"timeout_secs": 1, "max_memory_mb": 16}, {}),
    ("context", {}, {"context_files": LINKED}),
    ("context", {}, {"context_files": LINKED + INJECTED}),
]


def offered_tools(capability_id, config, resources):
    toolset = build(capability_id, config, context=toolset_context(**resources))
    if toolset is None:
        return {}
    _, script = run_agent([toolset], ["done"])
    return {t.metadata[TOOL_ID_METADATA]: t for t in script.infos[0].function_tools}


def test_every_capability_built_here_registers_a_builder():
    for capability_id in builders():
        assert toolset_builder(capability_id) is not None, capability_id


@pytest.mark.parametrize(
    ("capability_id", "config", "resources"), CASES, ids=lambda v: repr(v)[:40]
)
def test_declared_tools_equal_the_tools_offered_to_the_model(capability_id, config, resources):
    capability = get_capability(capability_id)
    offered = offered_tools(capability_id, config, resources)
    assert set(offered) == {t.id for t in capability.offered_tools(config)}
    for tool_id, definition in offered.items():
        assert definition.name == tool_id
        assert definition.description == capability.tool(tool_id).description


def test_subtask_tools_are_declared_always_and_offered_only_with_subtasks():
    declared = set(get_capability("planning").tool_ids)
    flat = set(offered_tools("planning", {}, {}))
    assert declared - flat == {"add_subtask", "set_dependency", "get_available_tasks"}
    assert set(offered_tools("planning", {"enable_subtasks": True}, {})) == declared


@pytest.mark.parametrize("capability_id", ["clock", "thinking"])
def test_capabilities_without_tools_offer_none(capability_id):
    assert get_capability(capability_id).tools == ()
    assert build(capability_id) is None


@pytest.mark.parametrize(
    "resources",
    [{}, {"context_files": []}, {"context_files": INJECTED}],
    ids=["no files", "empty", "inject only"],
)
def test_context_bound_with_no_link_file_offers_no_tool(resources):
    assert build("context", context=toolset_context(**resources)) is None


@pytest.mark.parametrize(
    ("capability_id", "config", "resources"), CASES, ids=lambda v: repr(v)[:40]
)
def test_every_offered_tool_text_has_the_summary_returns_shape(capability_id, config, resources):
    for definition in offered_tools(capability_id, config, resources).values():
        assert has_tool_text_shape(definition.description), definition.name
        summary, returns = split_tool_text(definition.description)
        assert "\n\n" in summary  # what it does, then when to use it (and the arguments)
        assert returns.strip()


def test_every_argument_the_model_sees_is_described_in_the_text():
    for capability_id, config, resources in CASES:
        for definition in offered_tools(capability_id, config, resources).values():
            summary, _ = split_tool_text(definition.description)
            for argument in definition.parameters_json_schema.get("properties", {}):
                assert f"`{argument}`" in summary, (definition.name, argument)


def test_a_rename_changes_the_name_the_model_sees_not_the_tool_id():
    toolset = build("charts", tool_overrides={"create_chart": {"name": "plot"}})
    _, script = run_agent([toolset], ["done"])
    (definition,) = script.infos[0].function_tools
    assert definition.name == "plot"
    assert definition.metadata[TOOL_ID_METADATA] == "create_chart"
    assert has_tool_text_shape(definition.description)


def test_a_re_description_keeps_the_declared_returns():
    toolset = build("charts", tool_overrides={"create_chart": {"description": "Draw our KPIs."}})
    _, script = run_agent([toolset], ["done"])
    (definition,) = script.infos[0].function_tools
    summary, returns = split_tool_text(definition.description)
    assert summary == "Draw our KPIs."
    assert returns == split_tool_text(get_capability("charts").tool("create_chart").description)[1]


@pytest.mark.parametrize("capability_id", sorted(builders()))
def test_the_six_are_available_in_the_registry(capability_id):
    capability = get_capability(capability_id)
    assert capability.available
    assert capability.unavailable_reason == ""


# --- skills: its tool comes with its capability (pydantic-ai-skills), not from a toolset -------


def _skills_offered(snapshots) -> dict:
    from apps.capabilities.tools.skills import build_skills_toolset, skills_capability

    assert build_skills_toolset({"id": "skills"}, toolset_context()) is None
    capability = skills_capability(snapshots)
    _, script = run_agent([], ["done"], capabilities=[capability] if capability else [])
    return {
        t.metadata[TOOL_ID_METADATA]: t
        for t in script.infos[0].function_tools
        if t.metadata and TOOL_ID_METADATA in t.metadata
    }, {t.name for t in script.infos[0].function_tools}


def test_skills_declares_exactly_what_a_skill_with_files_is_offered():
    from apps.capabilities.tools.skills import SkillSnapshot

    capability = get_capability("skills")
    with_files = [SkillSnapshot("style", "Style.", "Body.", {"letter.md": "Dear"})]
    offered, names = _skills_offered(with_files)
    assert set(offered) == {t.id for t in capability.offered_tools({})}
    assert "run_skill_script" not in names
    for tool_id, definition in offered.items():
        assert definition.name == tool_id
        assert definition.description == capability.tool(tool_id).description
        assert has_tool_text_shape(definition.description)
        summary, _ = split_tool_text(definition.description)
        for argument in definition.parameters_json_schema.get("properties", {}):
            assert f"`{argument}`" in summary, (definition.name, argument)
    # Every name the model is offered is declared, or is the framework's own load_capability.
    assert names - set(offered) == {"load_capability"}


def test_skills_without_files_offer_no_declared_tool_and_none_bound_attach_nothing():
    from apps.capabilities.tools.skills import SkillSnapshot

    offered, names = _skills_offered([SkillSnapshot("style", "Style.", "Body.")])
    assert offered == {} and names == {"load_capability"}
    offered, names = _skills_offered([])
    assert offered == {} and names == set()


def test_a_skills_binding_renames_read_skill_resource_and_the_call_still_reads_the_file():
    from apps.capabilities.tools.skills import SkillSnapshot, skills_capability

    binding = {
        "id": "skills",
        "tool_overrides": {"read_skill_resource": {"name": "skill_file", "description": "Read."}},
    }
    capability = skills_capability(
        [SkillSnapshot("style", "Style.", "Body.", {"letter.md": "Dear reader"})], binding
    )
    steps = [
        call("load_capability", id="style"),
        call("skill_file", skill_name="style", resource_name="letter.md"),
        "done",
    ]
    result, script = run_agent([], steps, capabilities=[capability])
    [renamed] = [t for t in script.infos[0].function_tools if t.name == "skill_file"]
    assert renamed.metadata[TOOL_ID_METADATA] == "read_skill_resource"
    summary, returns = split_tool_text(renamed.description)
    assert summary == "Read."
    assert (
        returns
        == split_tool_text(get_capability("skills").tool("read_skill_resource").description)[1]
    )
    assert any("Dear reader" in str(part.content) for part in tool_returns(result.all_messages()))
