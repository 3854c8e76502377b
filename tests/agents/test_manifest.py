"""What a run gets (seed 004's `tools ls`), approval resolution, and the drift test."""

import pytest

from apps.agents.manifest import approval_required, offered_tool_names, tool_manifest
from apps.capabilities.registry import all_capabilities

from .conftest import binding, spec_with

SPEC_BINDABLE = [c for c in all_capabilities() if c.id != "channel_tools"]


@pytest.mark.parametrize("cap", SPEC_BINDABLE, ids=lambda c: c.id)
def test_drift_every_declared_tool_is_offered_or_withheld_exactly_as_the_registry_says(
    cap, as_if_built
):
    """The tools a run is given are the tools the capability declares and offers — no more, no
    fewer. A capability that gains a tool in code without declaring it (or declares one that is
    never given) fails here."""
    as_if_built(cap.id)
    manifest = tool_manifest(spec_with(binding(cap.id)))
    offered = [row.tool_id for row in manifest.tools]
    withheld = [w.tool_id for w in manifest.withheld]
    assert offered == [t.id for t in cap.offered_tools({})]
    assert sorted(offered + withheld) == sorted(cap.tool_ids)
    assert all(row.capability == cap.id for row in manifest.tools)


@pytest.mark.parametrize("cap", [c for c in SPEC_BINDABLE if not c.available], ids=lambda c: c.id)
def test_an_unbuilt_capability_withholds_every_tool_and_says_why(cap):
    manifest = tool_manifest(spec_with(binding(cap.id)))
    assert manifest.tools == []
    assert [w.tool_id for w in manifest.withheld] == list(cap.tool_ids)
    assert all(
        f"the {cap.name} capability is not available yet" in w.reason for w in manifest.withheld
    )


def test_drift_delegation_offers_lifecycle_tools_only_when_background_is_reachable(as_if_built):
    as_if_built("subagents")
    sync = offered_tool_names(spec_with(binding("subagents")))
    assert "task" in sync and "check_task" not in sync and "answer_subagent" not in sync
    dynamic = offered_tool_names(
        spec_with(binding("subagents", {"allow_dynamic": True, "mode": "async"}))
    )
    assert {"check_task", "create_agent", "delegate"} <= set(dynamic)
    assert "answer_subagent" not in dynamic  # declared, offered to no model


def test_approval_resolution_tool_override_then_binding_then_side_effects():
    spec = spec_with(
        binding(
            "sandbox",
            {"backend": "service"},
            approval="never",
            tool_approval={"read_file": "required"},
        ),
        binding("browser_use"),
    )
    assert approval_required(spec, "read_file") is True  # the tool's own override
    assert approval_required(spec, "execute") is False  # the binding's mode beats side effects
    assert approval_required(spec, "browser_click") is True  # default: side_effecting decides
    assert approval_required(spec, "browser_read") is False


def test_a_rename_never_removes_the_gate(as_if_built):
    as_if_built("sandbox")
    spec = spec_with(
        binding(
            "sandbox",
            tool_overrides={"write_file": {"name": "save_notes"}},
            tool_approval={"write_file": "required"},
        )
    )
    names = offered_tool_names(spec)
    assert names["save_notes"] == "write_file" and "write_file" not in names
    assert approval_required(spec, "write_file") is True


def test_disabled_and_unbound_capabilities_are_reported():
    manifest = tool_manifest(spec_with(binding("clock"), binding("planning", enabled=False)))
    assert manifest.disabled_capabilities == ["planning"]
    assert "web_research" in manifest.not_bound and "clock" not in manifest.not_bound
    assert manifest.tools == []
