"""`agenticos tools ls` lists exactly the tools a run of the agent gets, with the name and the
description the model reads (apps/capabilities/tool_view.py is the one answer both ask).

The cases that used to drift: a knowledge binding with no collection connected (the manifest
listed ``search_documents``; a run gets nothing), skills that ship no file (the manifest listed
``read_skill_resource``), the AgenticOS template, and a re-described tool (the manifest showed
the author's raw text; the model reads it with the declared ``<returns>``).
"""

from __future__ import annotations

import json
from io import StringIO

import pytest
from asgiref.sync import async_to_sync
from django.core.management import call_command
from pydantic_ai.messages import ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from apps.agents.models import Agent
from apps.agents.services import ensure_template_agent
from apps.knowledge.services import collection_create, skill_create
from apps.runs.runner import prepare
from tests.runs.factories import published_agent, queued_run

pytestmark = pytest.mark.django_db(transaction=True)


def _tools_ls(agent) -> dict[str, str]:
    out = StringIO()
    call_command("tools", "ls", "--agent", str(agent.pk), "--json", stdout=out)
    return {row["name"]: row["description"] for row in json.loads(out.getvalue())["tools"]}


def _withheld(agent) -> set[str]:
    out = StringIO()
    call_command("tools", "ls", "--agent", str(agent.pk), "--json", stdout=out)
    return {row["tool_id"] for row in json.loads(out.getvalue())["withheld"]}


def _what_a_run_gets(agent, user) -> dict[str, str]:
    """Name → description of every tool in the first model request of a prepared run."""
    prepared = prepare(queued_run(user, agent.organization, agent, "hello"))
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
    return {tool.name: tool.description for tool in seen[0].function_tools}


def test_knowledge_bound_without_a_collection_lists_no_search(org, owner):
    agent = published_agent(org, capabilities=[{"id": "knowledge"}], knowledge_collections=[])
    listed = _tools_ls(agent)
    assert "search_documents" not in listed
    assert "search_documents" in _withheld(agent)
    assert "search_documents" not in _what_a_run_gets(agent, owner)


def test_knowledge_with_a_collection_lists_the_search_a_run_gets(org, owner):
    handbook = collection_create(actor=owner, organization=org, name="Handbook")
    agent = published_agent(
        org, capabilities=[{"id": "knowledge"}], knowledge_collections=[handbook.pk]
    )
    listed = _tools_ls(agent)
    offered = _what_a_run_gets(agent, owner)
    assert listed["search_documents"] == offered["search_documents"]


@pytest.mark.parametrize("files", [{}, {"letter.md": "Dear"}], ids=["no file", "a file"])
def test_skills_list_read_skill_resource_exactly_when_a_skill_ships_a_file(org, owner, files):
    skill = skill_create(
        actor=owner,
        organization=org,
        name="house-style",
        description="Use for customer letters.",
        body="Short sentences.",
        files=files,
    )
    agent = published_agent(org, capabilities=[{"id": "skills"}], skill_ids=[skill.pk])
    listed = _tools_ls(agent)
    offered = _what_a_run_gets(agent, owner)
    assert ("read_skill_resource" in listed) is bool(files)
    assert ("read_skill_resource" in offered) is bool(files)
    if files:
        assert listed["read_skill_resource"] == offered["read_skill_resource"]


def test_the_template_lists_what_its_runs_get(org, owner):
    ensure_template_agent(organization=org, owner=owner)
    template = Agent.objects.get(organization=org, is_template=True)
    listed = _tools_ls(template)
    offered = _what_a_run_gets(template, owner)
    assert set(listed) <= set(offered), set(listed) - set(offered)
    assert "read_skill_resource" not in listed or "read_skill_resource" in offered
    for name, description in listed.items():
        assert offered[name] == description, name


def test_a_renamed_and_redescribed_tool_reads_the_same_in_both(org, owner):
    agent = published_agent(
        org,
        capabilities=[
            {
                "id": "planning",
                "tool_overrides": {
                    "add_task": {"name": "note_task", "description": "Note one thing to do."}
                },
            }
        ],
    )
    listed = _tools_ls(agent)
    offered = _what_a_run_gets(agent, owner)
    assert listed["note_task"] == offered["note_task"]
    assert "Note one thing to do." in listed["note_task"] and "<returns>" in listed["note_task"]
