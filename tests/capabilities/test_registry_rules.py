"""What register(...) refuses, and the web_fetch host filters."""

import pytest
from pydantic import ValidationError

from apps.capabilities.domains import host_spellings, normalize_host
from apps.capabilities.registry import (
    CapabilityDeclarationError,
    CapabilityRegistry,
    VoiceMode,
    get_capability,
    tool,
)
from apps.capabilities.schema import CapabilityConfig, EnumLabelsMissing, setting


class _Empty(CapabilityConfig):
    """No settings."""


def _declaration(**overrides):
    declaration = dict(
        id="probe",
        name="Probe",
        category="utility",
        does="Probes.",
        examples=("probe once",),
        needs="Nothing.",
        never="Harms.",
        tools=(),
        voice=VoiceMode.LIVE,
        config_model=_Empty,
    )
    declaration.update(overrides)
    return declaration


def _probe_tool(tool_id="probe_tool", **kw):
    return tool(tool_id, does="Probe.", when="Always.", args={}, returns="A line.", **kw)


def test_a_duplicate_capability_id_is_refused():
    registry = CapabilityRegistry()
    registry.register(**_declaration())
    with pytest.raises(CapabilityDeclarationError, match="already registered"):
        registry.register(**_declaration())


def test_a_tool_id_declared_by_another_capability_is_refused():
    registry = CapabilityRegistry()
    registry.register(**_declaration(tools=(_probe_tool(),)))
    with pytest.raises(CapabilityDeclarationError, match="already declared by 'probe'"):
        registry.register(**_declaration(id="probe_two", tools=(_probe_tool(),)))


def test_tools_must_be_given_explicitly_as_a_tuple():
    registry = CapabilityRegistry()
    declaration = _declaration()
    del declaration["tools"]
    with pytest.raises(TypeError, match="tools"):
        registry.register(**declaration)
    with pytest.raises(CapabilityDeclarationError, match=r"tools=\(\)"):
        registry.register(**_declaration(tools=[]))


def test_unknown_scope_and_category_are_refused():
    registry = CapabilityRegistry()
    with pytest.raises(CapabilityDeclarationError, match="unknown scope"):
        registry.register(**_declaration(scopes=("web:everything",)))
    with pytest.raises(CapabilityDeclarationError, match="unknown category"):
        registry.register(**_declaration(category="magic"))


def test_a_tool_description_without_the_shape_is_refused():
    from apps.capabilities.registry import ToolSpec

    with pytest.raises(CapabilityDeclarationError, match="<summary>"):
        CapabilityRegistry().register(
            **_declaration(tools=(ToolSpec("probe_tool", "Just prose."),))
        )


def test_an_enum_without_labels_is_refused():
    from typing import Literal

    class Unlabelled(CapabilityConfig):
        mode: Literal["a", "b"] = setting("a", description="A mode.")

    with pytest.raises(CapabilityDeclarationError, match="x-enum-labels") as info:
        CapabilityRegistry().register(**_declaration(config_model=Unlabelled))
    assert isinstance(info.value.__cause__, EnumLabelsMissing)


def test_conditional_key_needs_a_condition():
    with pytest.raises(CapabilityDeclarationError, match="key_condition"):
        CapabilityRegistry().register(**_declaration(key_requirement="conditional"))


def test_a_condition_naming_a_missing_field_fails_at_registration():
    from apps.capabilities.conditions import When

    with pytest.raises(CapabilityDeclarationError, match="condition fails"):
        CapabilityRegistry().register(
            **_declaration(tools=(_probe_tool(provider_executed_when=When("methd", "native")),))
        )


@pytest.mark.parametrize(
    ("entry", "stored"),
    [
        ("Example.COM", "example.com"),
        ("example.com.", "example.com"),
        ("exämple.com", "xn--exmple-cua.com"),
        ("xn--exmple-cua.com", "xn--exmple-cua.com"),
        ("docs.python.org", "docs.python.org"),
    ],
)
def test_a_host_is_stored_in_the_one_spelling_dns_is_asked_for(entry, stored):
    assert normalize_host(entry) == stored


@pytest.mark.parametrize(
    ("entry", "reason"),
    [
        ("*.example.com", "wildcard"),
        ("https://example.com", "scheme"),
        ("example.com/path", "path"),
        ("example.com:8080", "port"),
        ("", "empty"),
        ("exa mple.com", "spaces"),
    ],
)
def test_a_host_entry_that_could_never_match_is_refused(entry, reason):
    with pytest.raises(ValueError, match=reason):
        normalize_host(entry)


def test_the_filter_is_handed_every_equivalent_spelling():
    assert set(host_spellings("exämple.com")) == {
        "xn--exmple-cua.com",
        "exämple.com",
        "xn--exmple-cua.com.",
        "exämple.com.",
    }


def test_web_fetch_domain_lists():
    fetch = get_capability("web_fetch")
    config = fetch.parse_config(
        {"allowed_domains": ["Exämple.com", "xn--exmple-cua.com."], "blocked_domains": []}
    )
    assert config.allowed_domains == ["xn--exmple-cua.com"]
    assert config.blocked_domains is None  # an empty deny list reads as unset
    with pytest.raises(ValidationError, match="empty allow list"):
        fetch.parse_config({"allowed_domains": []})
    with pytest.raises(ValidationError, match="blocked_domains"):
        fetch.parse_config({"blocked_domains": ["*.evil.test"]})
