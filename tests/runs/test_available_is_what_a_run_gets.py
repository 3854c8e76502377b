"""The drift test behind "only what runs is offered": for every capability, `available` is true
exactly when a real prepared run offers the model that capability's tools.

Each capability is bound alone to a published agent and a run of it is assembled by the runner's
own `prepare()`; the tools are read from what the first model request carries. A capability that
is declared available but gives a run nothing (or gives tools while the registry says it is not
built) fails here, and so would "Your setup", the manifest and the Builder that read the flag.
"""

from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync
from pydantic_ai.messages import ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from apps.agents.validation import SPEC_FORBIDDEN_CAPABILITIES
from apps.capabilities.registry import all_capabilities
from apps.capabilities.tools._toolsets import CAPABILITY_METADATA
from apps.memory.models import ContextFile
from apps.runs.runner import RunNotRunnable, prepare
from apps.vault.services import secret_create

from .factories import published_agent, queued_run

BINDABLE = [c for c in all_capabilities() if c.id not in SPEC_FORBIDDEN_CAPABILITIES]


def _spec_binding_only(capability, organization, owner) -> dict:
    """A spec with `capability` alone, in a configuration that offers its tools when it is built."""
    binding = {"id": capability.id, "config": {}}
    others = []
    purpose = "capability"
    if capability.id == "coding_agent":
        # The coding agent runs in the agent's sandbox, needs its shell and a model provider key.
        others.append({"id": "sandbox", "config": {"backend": "service", "include_execute": True}})
        purpose = "anthropic"
    if capability.needs_key():
        secret = secret_create(
            actor=owner,
            organization=organization,
            name=f"{capability.id} key",
            purpose=purpose,
            value="k",
        )
        binding["secret_id"] = secret.pk
    spec = {"capabilities": [binding, *others]}
    if capability.id == "subagents":
        # Bound without a delegate, delegation attaches nothing (seed 000): pin one.
        helper = published_agent(organization, name="Delegate")
        spec["subagents"] = [{"agent_id": helper.pk, "version": 1}]
    if capability.id == "context":
        # Context offers its reading tools only when a link file is bound.
        linked = ContextFile.objects.create(
            organization=organization, name="Escalation matrix", body="Billing → Ana", mode="link"
        )
        spec["context_ids"] = [linked.pk]
    if capability.id == "knowledge":
        # Knowledge search attaches only with a collection connected.
        from apps.knowledge.services import collection_create

        spec["knowledge_collections"] = [
            collection_create(actor=owner, organization=organization, name="Handbook").pk
        ]
    if capability.id == "skills":
        # read_skill_resource is offered only when a bound skill ships a file.
        from apps.knowledge.services import skill_create

        spec["skill_ids"] = [
            skill_create(
                actor=owner,
                organization=organization,
                name="house-style",
                description="Use for customer letters.",
                body="Short sentences.",
                files={"letter.md": "Dear"},
            ).pk
        ]
    return spec


def _tools_the_model_is_offered(prepared) -> dict[str, set[str]]:
    """Capability id → the names of its tools in the first model request of the prepared run."""
    seen: list[AgentInfo] = []

    def first_request(messages, info: AgentInfo) -> ModelResponse:
        seen.append(info)
        return ModelResponse(parts=[TextPart("done")])

    async def go():
        await prepared.agent.run(
            prepared.user_prompt,
            model=FunctionModel(first_request),
            usage_limits=prepared.usage_limits,
        )

    async_to_sync(go)()
    offered: dict[str, set[str]] = {}
    for tool in seen[0].function_tools:
        owner = (tool.metadata or {}).get(CAPABILITY_METADATA)
        if owner:
            offered.setdefault(owner, set()).add(tool.name)
    return offered


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("capability", BINDABLE, ids=lambda c: c.id)
def test_available_exactly_when_a_prepared_run_offers_the_capabilitys_tools(capability, org, owner):
    agent = published_agent(org, created_by=owner, **_spec_binding_only(capability, org, owner))
    try:
        prepared = prepare(queued_run(owner, org, agent, "hello"))
    except RunNotRunnable:
        # Some unbuilt capabilities need parts that do not exist yet (the coding agent needs a
        # registered sandbox service): such a run is refused whole, which offers nothing either.
        assert not capability.available
        return

    offered = _tools_the_model_is_offered(prepared).get(capability.id, set())

    if capability.available:
        config = capability.parse_config({})
        assert offered == {t.id for t in capability.offered_tools(config)}
        assert capability.id not in prepared.unbuilt_capabilities
    else:
        assert offered == set()
        assert capability.id in prepared.unbuilt_capabilities


def test_the_flag_has_one_definition_read_by_every_surface():
    from apps.agents.manifest import tool_manifest
    from apps.agents.template import template_spec
    from apps.capabilities.registry import capability_payload

    built = {c.id for c in all_capabilities() if c.available}
    assert {c["id"] for c in map(capability_payload, all_capabilities()) if c["available"]} == built
    assert {b.id for b in template_spec().capabilities} <= built
    # The template's manifest (`tools ls`, GET agents/{id}/tools/) offers only built tools.
    manifest = tool_manifest(template_spec())
    assert manifest.tools and {row.capability for row in manifest.tools} <= built
