"""One test per publish rule of the seeds: each refusal names binding and field, and the nearest
legitimate spec is accepted. The same function re-runs when a run assembles a frozen version."""

import pytest
from django.test import override_settings

from apps.agents.models import AgentVersion, SandboxConnection
from apps.agents.services import PublishRefused, agent_publish
from apps.agents.validation import SpecNotRunnable, assert_runnable, validate_spec

from .conftest import binding, spec_with


def where(errors):
    return {(e.binding, e.field) for e in errors}


@pytest.fixture
def check(org, builder):
    def run(spec, *, actor=None, organization=None):
        return validate_spec(spec, organization=organization or org, actor=actor or builder)

    return run


# --- config against its schema -----------------------------------------------------------


def test_config_outside_its_range_is_refused_naming_the_field(check):
    errors = check(spec_with(binding("web_research", {"max_results": 11})))
    assert where(errors) == {("web_research", "config.max_results")}


def test_config_unknown_key_is_refused(check):
    errors = check(spec_with(binding("web_research", {"max_resutls": 3})))
    assert where(errors) == {("web_research", "config.max_resutls")}


def test_config_within_schema_is_accepted(check):
    assert check(spec_with(binding("web_research", {"max_results": 10}))) == []


def test_unknown_capability_and_double_binding_are_refused(check):
    errors = check(spec_with(binding("telepathy"), binding("clock"), binding("clock")))
    assert where(errors) == {("telepathy", "id"), ("clock", "id")}


# --- approval on a provider-executed tool ------------------------------------------------


def test_required_approval_on_native_web_search_is_refused(check):
    errors = check(
        spec_with(
            binding("web_research", {"method": "native"}, tool_approval={"web_search": "required"})
        )
    )
    assert where(errors) == {("web_research", "tool_approval.web_search")}
    assert "provider" in errors[0].message


def test_binding_wide_required_approval_with_native_search_is_refused(check):
    errors = check(spec_with(binding("web_research", {"method": "native"}, approval="required")))
    assert where(errors) == {("web_research", "approval")}


@pytest.mark.parametrize("method", ["native", "auto"])
def test_required_approval_on_provider_run_web_fetch_is_refused(check, method):
    errors = check(
        spec_with(binding("web_fetch", {"method": method}, tool_approval={"web_fetch": "required"}))
    )
    assert where(errors) == {("web_fetch", "tool_approval.web_fetch")}


def test_required_approval_on_a_tool_this_deployment_runs_is_accepted(check):
    assert (
        check(
            spec_with(
                binding("web_fetch", {"method": "local"}, tool_approval={"web_fetch": "required"})
            )
        )
        == []
    )
    assert check(spec_with(binding("web_research", {"method": "native"}))) == []


# --- domain filters ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "entry", ["*.example.com", "https://example.com", "example.com/docs", "example.com:8080"]
)
def test_domain_filter_entry_that_could_never_match_is_refused(check, entry):
    for field in ("allowed_domains", "blocked_domains"):
        errors = check(spec_with(binding("web_fetch", {field: [entry]})))
        assert where(errors) == {("web_fetch", f"config.{field}")}, entry


def test_empty_allow_list_is_refused(check):
    errors = check(spec_with(binding("web_fetch", {"allowed_domains": []})))
    assert where(errors) == {("web_fetch", "config.allowed_domains")}


def test_empty_deny_list_reads_as_unset_and_hosts_are_stored_in_dns_spelling(make_agent, builder):
    agent = make_agent(
        spec_with(
            binding(
                "web_fetch",
                {"blocked_domains": [], "allowed_domains": ["Docs.Example.COM.", "exämple.com"]},
            )
        )
    )
    version = agent_publish(actor=builder, agent=agent)
    config = version.spec["capabilities"][0]["config"]
    assert config["blocked_domains"] is None
    assert config["allowed_domains"] == ["docs.example.com", "xn--exmple-cua.com"]


# --- keys ----------------------------------------------------------------------------------


def test_paid_search_method_without_a_key_is_refused(check):
    errors = check(spec_with(binding("web_research", {"method": "tavily"})))
    assert where(errors) == {("web_research", "secret_id")}


def test_required_key_without_secret_is_refused(check):
    assert where(check(spec_with(binding("memory_mem0")))) == {("memory_mem0", "secret_id")}


def test_a_key_of_another_organization_is_refused_like_a_missing_one(check, other_org, make_secret):
    theirs = make_secret(organization=other_org)
    errors = check(spec_with(binding("web_research", {"method": "tavily"}, secret_id=theirs.pk)))
    assert where(errors) == {("web_research", "secret_id")}
    assert "no secret" in errors[0].message


def test_paid_search_with_an_organization_key_is_accepted(check, make_secret):
    key = make_secret()
    assert check(spec_with(binding("web_research", {"method": "tavily"}, secret_id=key.pk))) == []
    # The free method needs none.
    assert check(spec_with(binding("web_research", {"method": "duckduckgo"}))) == []


def test_a_chat_token_is_never_a_capability_key(check, make_secret):
    token = make_secret(name="slack", purpose="channel")
    errors = check(spec_with(binding("memory_mem0", secret_id=token.pk)))
    assert where(errors) == {("memory_mem0", "secret_id")}


# --- scopes ----------------------------------------------------------------------------------


def test_a_capability_whose_scope_is_not_granted_is_refused(check):
    with override_settings(DEFAULT_GRANTED_SCOPES=("knowledge:read",)):
        errors = check(spec_with(binding("web_research")))
    assert where(errors) == {("web_research", "id")}
    assert "web:read" in errors[0].message


def test_a_capability_whose_scope_is_granted_is_accepted(check):
    assert check(spec_with(binding("web_research"), binding("conversation_search"))) == []


def test_a_disabled_binding_needs_no_scope(check):
    with override_settings(DEFAULT_GRANTED_SCOPES=()):
        assert check(spec_with(binding("web_research", enabled=False))) == []


# --- channel_tools ---------------------------------------------------------------------------


@pytest.mark.parametrize("enabled", [True, False])
def test_channel_tools_in_a_spec_is_refused(check, enabled):
    errors = check(spec_with(binding("channel_tools", enabled=enabled)))
    assert where(errors) == {("channel_tools", "id")}
    assert "per chat binding" in errors[0].message


# --- delegation ------------------------------------------------------------------------------


def test_share_with_delegates_naming_an_unbound_capability_is_refused(check):
    errors = check(spec_with(binding("subagents", {"share_with_delegates": ["sandbox"]})))
    assert where(errors) == {("subagents", "config.share_with_delegates[0]")}


def test_share_with_delegates_never_names_subagents(check):
    errors = check(spec_with(binding("subagents", {"share_with_delegates": ["subagents"]})))
    assert where(errors) == {("subagents", "config.share_with_delegates")}


def test_share_with_delegates_naming_a_bound_capability_is_accepted(check):
    assert (
        check(
            spec_with(binding("subagents", {"share_with_delegates": ["clock"]}), binding("clock"))
        )
        == []
    )


@pytest.fixture
def published_helper(make_agent, builder):
    agent = make_agent(spec_with(binding("clock")), name="Researcher")
    agent_publish(actor=builder, agent=agent)
    return agent


def test_delegates_while_delegation_is_disabled_are_refused(check, published_helper):
    for spec in (
        spec_with(subagents=[{"agent_id": published_helper.pk}]),
        spec_with(
            binding("subagents", enabled=False), subagents=[{"agent_id": published_helper.pk}]
        ),
    ):
        assert where(check(spec)) == {(None, "subagents")}


def test_delegates_with_delegation_enabled_are_accepted(check, published_helper):
    assert (
        check(
            spec_with(
                binding("subagents"), subagents=[{"agent_id": published_helper.pk, "version": 1}]
            )
        )
        == []
    )


def test_a_delegate_of_another_organization_or_missing_version_is_refused(
    check, published_helper, other_org, outsider
):
    from apps.agents.services import agent_create

    theirs = agent_create(actor=outsider, organization=other_org, name="Theirs", spec=spec_with())
    errors = check(
        spec_with(
            binding("subagents"),
            subagents=[{"agent_id": theirs.pk}, {"agent_id": published_helper.pk, "version": 7}],
        )
    )
    assert where(errors) == {(None, "subagents[0].agent_id"), (None, "subagents[1].version")}


def test_a_delegate_the_publisher_may_not_run_is_refused(check, published_helper, viewer):
    errors = check(
        spec_with(binding("subagents"), subagents=[{"agent_id": published_helper.pk}]), actor=viewer
    )
    assert where(errors) == {(None, "subagents[0].agent_id")}


# --- tool ids and names ----------------------------------------------------------------------


def test_tool_approval_naming_a_tool_id_no_capability_exposes_is_refused(check):
    errors = check(spec_with(binding("planning", tool_approval={"make_plan": "required"})))
    assert where(errors) == {("planning", "tool_approval.make_plan")}


def test_tool_override_naming_another_capabilitys_tool_is_refused(check):
    errors = check(spec_with(binding("planning", tool_overrides={"web_search": {"name": "find"}})))
    assert where(errors) == {("planning", "tool_overrides.web_search")}
    assert "web_research" in errors[0].message


@pytest.mark.parametrize("name", ["search refunds", "", "x" * 65, "búsqueda"])
def test_a_name_no_model_could_call_is_refused(check, name):
    errors = check(
        spec_with(binding("knowledge", tool_overrides={"search_documents": {"name": name}}))
    )
    assert where(errors) == {("knowledge", "tool_overrides.search_documents.name")}


def test_a_callable_rename_and_a_tool_approval_by_stable_id_are_accepted(check):
    spec = spec_with(
        binding(
            "knowledge",
            tool_overrides={
                "search_documents": {"name": "search_refund_policy", "description": "Refunds."}
            },
            tool_approval={"search_documents": "required"},
        )
    )
    assert check(spec) == []


def test_two_tools_renamed_to_one_visible_name_are_refused(check):
    errors = check(
        spec_with(
            binding("clock"),
            binding("planning", tool_overrides={"read_plan": {"name": "write_plan"}}),
        )
    )
    assert ("planning", "tool_overrides.read_plan.name") in where(errors)


# --- guardrails ------------------------------------------------------------------------------


def test_unknown_phone_region_is_refused(check):
    errors = check(spec_with(binding("guardrails", {"phone_regions": "US, UK"})))
    assert where(errors) == {("guardrails", "config.phone_regions")}
    assert "GB" in errors[0].message


def test_more_than_sixteen_phone_regions_are_refused(check):
    regions = "US, GB, DE, PL, FR, ES, IT, NL, BE, AT, CH, SE, NO, DK, FI, IE, PT"
    assert len(regions.split(",")) == 17
    errors = check(spec_with(binding("guardrails", {"phone_regions": regions})))
    assert where(errors) == {("guardrails", "config.phone_regions")}


def test_sixteen_known_phone_regions_are_accepted(check):
    regions = "US, GB, DE, PL, FR, ES, IT, NL, BE, AT, CH, SE, NO, DK, FI, IE"
    assert (
        check(spec_with(binding("guardrails", {"phone_regions": regions, "redact_pii_out": True})))
        == []
    )


# --- sandbox and coding agent ----------------------------------------------------------------


def test_service_sandbox_without_any_registered_connection_is_refused(check):
    errors = check(spec_with(binding("sandbox", {"backend": "service"})))
    assert where(errors) == {("sandbox", "config.backend")}


def test_service_sandbox_naming_a_missing_connection_is_refused(check, org, make_secret):
    SandboxConnection.objects.create(
        organization=org,
        name="main",
        label="Main",
        base_url="https://sbx.test",
        secret=make_secret(),
        is_default=True,
    )
    errors = check(spec_with(binding("sandbox", {"backend": "service", "connection_id": "gone"})))
    assert where(errors) == {("sandbox", "config.connection_id")}
    assert "no longer exists" in errors[0].message


def test_service_sandbox_on_a_connection_without_credential_is_refused(check, org):
    SandboxConnection.objects.create(
        organization=org, name="main", label="Main", base_url="https://sbx.test", is_default=True
    )
    errors = check(spec_with(binding("sandbox", {"backend": "service"})))
    assert where(errors) == {("sandbox", "config.connection_id")}
    assert "no credential" in errors[0].message


def test_service_sandbox_on_a_registered_connection_is_accepted(check, org, make_secret):
    SandboxConnection.objects.create(
        organization=org,
        name="main",
        label="Main",
        base_url="https://sbx.test",
        secret=make_secret(),
        is_default=True,
    )
    assert check(spec_with(binding("sandbox", {"backend": "service"}))) == []
    assert (
        check(spec_with(binding("sandbox", {"backend": "service", "connection_id": "main"}))) == []
    )


@pytest.mark.parametrize(
    "sandbox",
    [
        None,
        binding("sandbox"),
        binding("sandbox", {"backend": "service", "include_execute": False}),
    ],
    ids=["no-sandbox", "state-backend", "no-shell"],
)
def test_coding_agent_without_a_service_sandbox_with_shell_is_refused(
    check, org, make_secret, sandbox
):
    SandboxConnection.objects.create(
        organization=org,
        name="main",
        label="Main",
        base_url="https://sbx.test",
        secret=make_secret(),
        is_default=True,
    )
    key = make_secret(name="anthropic", purpose="anthropic")
    bindings = [binding("coding_agent", secret_id=key.pk)] + ([sandbox] if sandbox else [])
    assert ("coding_agent", "id") in where(check(spec_with(*bindings)))


def test_coding_agent_on_a_service_sandbox_with_shell_is_accepted(check, org, make_secret):
    SandboxConnection.objects.create(
        organization=org,
        name="main",
        label="Main",
        base_url="https://sbx.test",
        secret=make_secret(),
        is_default=True,
    )
    key = make_secret(name="anthropic", purpose="anthropic")
    spec = spec_with(
        binding("sandbox", {"backend": "service"}), binding("coding_agent", secret_id=key.pk)
    )
    assert check(spec) == []


def test_coding_agent_key_for_another_provider_is_refused(check, org, make_secret):
    SandboxConnection.objects.create(
        organization=org,
        name="main",
        label="Main",
        base_url="https://sbx.test",
        secret=make_secret(),
        is_default=True,
    )
    openai_key = make_secret(name="openai", purpose="openai")
    spec = spec_with(
        binding("sandbox", {"backend": "service"}), binding("coding_agent", secret_id=openai_key.pk)
    )
    assert where(check(spec)) == {("coding_agent", "secret_id")}


# --- model profile -----------------------------------------------------------------------------


def test_a_model_profile_of_another_organization_is_refused(check, other_org, org):
    from apps.agents.models import ModelProfile

    theirs = ModelProfile.objects.create(
        organization=other_org, label="Theirs", provider="offline", model_name="offline"
    )
    ours = ModelProfile.objects.create(
        organization=org, label="Ours", provider="offline", model_name="offline"
    )
    assert where(check(spec_with(model_profile_id=theirs.pk))) == {(None, "model_profile_id")}
    assert check(spec_with(model_profile_id=ours.pk)) == []


# --- context files -------------------------------------------------------------------------


def test_a_context_id_of_another_organization_or_none_is_refused(
    check, org, other_org, owner, outsider
):
    from apps.memory.services import context_file_create

    ours = context_file_create(
        actor=owner, organization=org, name="Glossary", body="ARR.", mode="inject"
    )
    theirs = context_file_create(
        actor=outsider, organization=other_org, name="Theirs", body="x", mode="inject"
    )
    spec = spec_with(binding("context"), context_ids=[ours.pk, theirs.pk, 999999])
    errors = check(spec)
    assert where(errors) == {("context", "context_ids")}
    assert len(errors) == 2  # one sentence per id, naming it
    assert check(spec_with(binding("context"), context_ids=[ours.pk])) == []


# --- publish and run assembly ------------------------------------------------------------------


def test_publish_refuses_with_every_error_and_freezes_nothing(make_agent, builder):
    agent = make_agent(
        spec_with(binding("web_research", {"method": "tavily"}), binding("channel_tools"))
    )
    with pytest.raises(PublishRefused) as refused:
        agent_publish(actor=builder, agent=agent)
    assert where(refused.value.errors) == {("web_research", "secret_id"), ("channel_tools", "id")}
    assert not AgentVersion.objects.filter(agent=agent).exists()


def test_a_version_published_before_a_rule_existed_is_refused_at_run_assembly(make_agent, builder):
    agent = make_agent(spec_with(binding("clock")))
    version = agent_publish(actor=builder, agent=agent)
    assert_runnable(version)  # runnable today
    # A version frozen before channel_tools was refused in specs: written as it was stored then.
    old = AgentVersion.objects.create(
        agent=agent,
        number=2,
        spec=spec_with(binding("clock"), binding("channel_tools")),
        published_by=builder,
    )
    with pytest.raises(SpecNotRunnable) as refused:
        assert_runnable(old)
    message = str(refused.value)
    assert "v2 cannot run until it is republished" in message
    assert "channel_tools: id" in message and "Remove it from capabilities" in message


def test_a_frozen_version_whose_key_was_deleted_is_refused_at_run_assembly(
    make_agent, builder, make_secret
):
    key = make_secret()
    agent = make_agent(spec_with(binding("web_research", {"method": "brave"}, secret_id=key.pk)))
    version = agent_publish(actor=builder, agent=agent)
    key.delete()
    with pytest.raises(SpecNotRunnable, match="web_research: secret_id"):
        assert_runnable(version)


def test_publishing_freezes_a_delegate_named_without_a_version(
    make_agent, builder, published_helper
):
    agent = make_agent(
        spec_with(binding("subagents"), subagents=[{"agent_id": published_helper.pk}])
    )
    version = agent_publish(actor=builder, agent=agent)
    assert version.spec["subagents"] == [
        {"agent_id": published_helper.pk, "version": 1, "mode": None}
    ]
    # A draft written before the field took its name still reads.
    from apps.agents.spec import AgentSpec

    legacy = AgentSpec.model_validate({"delegates": [{"agent_id": published_helper.pk}]})
    assert legacy.subagents[0].agent_id == published_helper.pk
