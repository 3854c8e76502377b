"""Skills through the real runner on the offline model: the catalog the model reads, the body
loaded on demand with load_capability, a resource read with read_skill_resource (offered only when
a bound skill ships files, run_skill_script never), and tenancy at publish and at assembly."""

import json

import pytest
from asgiref.sync import async_to_sync
from pydantic_ai.messages import ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from apps.agents.validation import validate_spec
from apps.capabilities.registry import get_capability
from apps.capabilities.tools._toolsets import CAPABILITY_METADATA, TOOL_ID_METADATA
from apps.knowledge.services import skill_create, skill_delete
from apps.runs.models import Conversation, Run
from apps.runs.runner import execute_run, prepare
from tests.runs.factories import published_agent, queued_run

pytestmark = pytest.mark.django_db

STYLE_BODY = "Write short sentences. Sign every letter as The Acme team. MARKER-BODY-7731"
TEMPLATE = "Dear customer, thank you for writing to Acme. MARKER-FILE-5512"


@pytest.fixture
def style(org, owner):
    return skill_create(
        actor=owner,
        organization=org,
        name="house-style",
        description="Use when drafting a customer letter in the house style.",
        body=STYLE_BODY,
        files={"templates/letter.md": TEMPLATE},
    )


@pytest.fixture
def checklist(org, owner):
    return skill_create(
        actor=owner,
        organization=org,
        name="incident-response",
        description="Use when an outage is reported.",
        body="Open a channel, page the on-call. MARKER-BODY-0042",
    )


def _agent(org, skills):
    return published_agent(
        org, capabilities=[{"id": "skills", "config": {}}], skill_ids=[s.pk for s in skills]
    )


def _first_request(run) -> AgentInfo:
    prepared = prepare(run)
    seen: list[AgentInfo] = []

    def answer(messages, info: AgentInfo) -> ModelResponse:
        seen.append(info)
        return ModelResponse(parts=[TextPart("done")])

    async def go():
        await prepared.agent.run(
            prepared.user_prompt, model=FunctionModel(answer), usage_limits=prepared.usage_limits
        )

    async_to_sync(go)()
    return seen[0]


def _everything_the_model_reads(info: AgentInfo) -> str:
    tools = [f"{t.name}: {t.description}" for t in info.function_tools]
    return "\n".join([info.instructions or "", *tools])


def _say(actor, org, agent, text, conversation=None) -> Run:
    run = queued_run(actor, org, agent, text, conversation=conversation)
    execute_run(run.pk)
    return Run.objects.get(pk=run.pk)


def _call(tool, **args) -> str:
    return f"/call {tool} {json.dumps(args)}"


def _returns(run: Run) -> list[str]:
    return [
        str(part["content"])
        for message in run.transcript
        for part in message.get("parts", [])
        if part.get("part_kind") in ("tool-return", "retry-prompt")
    ]


def test_the_catalog_carries_name_and_description_but_not_the_body(org, member, style, checklist):
    info = _first_request(queued_run(member, org, _agent(org, [style, checklist]), "hello"))
    seen = _everything_the_model_reads(info)
    for skill in (style, checklist):
        assert skill.name in seen and skill.description in seen
    assert "MARKER-BODY" not in seen and "MARKER-FILE" not in seen
    names = {t.name for t in info.function_tools}
    assert "load_capability" in names
    assert "run_skill_script" not in names


def test_read_skill_resource_is_offered_with_the_registrys_text_only_when_a_skill_has_files(
    org, member, style, checklist
):
    declared = get_capability("skills").tool("read_skill_resource")

    with_files = _first_request(queued_run(member, org, _agent(org, [style, checklist]), "hi"))
    [read] = [t for t in with_files.function_tools if t.name == "read_skill_resource"]
    assert read.description == declared.description
    assert read.metadata[TOOL_ID_METADATA] == "read_skill_resource"
    assert read.metadata[CAPABILITY_METADATA] == "skills"

    without = _first_request(queued_run(member, org, _agent(org, [checklist]), "hi"))
    names = {t.name for t in without.function_tools}
    assert "read_skill_resource" not in names and "run_skill_script" not in names
    assert "load_capability" in names


def test_the_body_loads_on_demand_and_then_a_resource_reads(org, member, style, checklist):
    agent = _agent(org, [style, checklist])
    conversation = Conversation.objects.create(organization=org, agent=agent, user=member)

    loaded = _say(member, org, agent, _call("load_capability", id="house-style"), conversation)
    assert loaded.status == "completed", loaded.error
    transcript = json.dumps(loaded.transcript)
    assert "MARKER-BODY-7731" in transcript  # the body arrived, only now
    assert "MARKER-BODY-0042" not in transcript  # the other skill's body stayed out
    assert "templates/letter.md" in transcript  # the bundled-files inventory names the file

    read = _say(
        member,
        org,
        agent,
        _call("read_skill_resource", skill_name="house-style", resource_name="templates/letter.md"),
        conversation,
    )
    assert read.status == "completed", read.error
    assert any("MARKER-FILE-5512" in r for r in _returns(read))


def test_a_resource_of_a_skill_not_loaded_is_a_retry_not_its_text(org, member, style):
    run = _say(
        member,
        org,
        _agent(org, [style]),
        _call("read_skill_resource", skill_name="house-style", resource_name="templates/letter.md"),
    )
    assert run.status == "completed", run.error
    returns = _returns(run)
    assert returns and not any("MARKER-FILE-5512" in r for r in returns)
    assert any("load_capability" in r for r in returns)


# --- tenancy ------------------------------------------------------------------------------


def test_another_organizations_skill_is_refused_at_publish(org, other_org, owner, outsider, style):
    theirs = skill_create(
        actor=outsider, organization=other_org, name="secret-recipe", description="Theirs."
    )
    spec = {"capabilities": [{"id": "skills"}], "skill_ids": [style.pk, theirs.pk, 999999]}
    errors = validate_spec(spec, organization=org, actor=owner)
    assert [(e.binding, e.field) for e in errors] == [("skills", "skill_ids")] * 2
    assert validate_spec({**spec, "skill_ids": [style.pk]}, organization=org, actor=owner) == []


def test_another_organizations_skill_in_a_frozen_spec_refuses_the_run(
    org, other_org, member, outsider
):
    theirs = skill_create(
        actor=outsider,
        organization=other_org,
        name="secret-recipe",
        description="Theirs.",
        body="The vault code is 4242.",
    )
    agent = _agent(org, [theirs])  # written straight to the version, as if published long ago
    run = _say(member, org, agent, _call("load_capability", id="secret-recipe"))
    assert run.status == "failed"
    assert "skill_ids" in run.error
    assert "4242" not in json.dumps(run.transcript)


def test_a_skill_deleted_since_publishing_refuses_the_run(org, owner, member, style):
    agent = _agent(org, [style])
    skill_delete(actor=owner, skill=style)
    run = _say(member, org, agent, "hello")
    assert run.status == "failed" and "skill_ids" in run.error


@pytest.mark.django_db(transaction=True)
def test_a_delegate_loads_the_skills_its_own_spec_binds(org, member, style):
    from tests.runs.delegating import delegating, run_of, task_call

    helper = published_agent(
        org, name="Writer", capabilities=[{"id": "skills"}], skill_ids=[style.pk]
    )
    parent = delegating(org, helper)
    run = run_of(
        member, org, parent, task_call(_call("load_capability", id="house-style"), "writer")
    )
    assert run.status == "completed", run.error
    child = Run.objects.get(parent_run=run)
    assert child.status == "completed", child.error
    assert "MARKER-BODY-7731" in (child.output + json.dumps(child.transcript))
    # The parent binds no skill: its own requests carry no skills catalog.
    parents = _first_request(queued_run(member, org, parent, "hi"))
    assert style.description not in _everything_the_model_reads(parents)
    assert "load_capability" not in {t.name for t in parents.function_tools}
