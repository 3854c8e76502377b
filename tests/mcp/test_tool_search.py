"""Tool search over a large MCP server: binding tool_search defers the connection's 100 tools, the
model finds the one it needs, and that tool keeps its real prefixed name — so the approval gate
and a binding's rename still reach it."""

from __future__ import annotations

import json

import pytest
from asgiref.sync import async_to_sync
from pydantic_ai import DeferredToolRequests
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import FunctionModel

from apps.runs.runner import RunNotRunnable, prepare
from apps.runs.services import run_create
from tests.runs.factories import published_agent

pytestmark = pytest.mark.django_db

SEARCH = "search_tools"


class LocalOnlyModel(FunctionModel):
    """A scripted model whose provider has no native tool search (like a chat-completions API):
    ``auto`` falls back to the local search tool. FunctionModel itself claims every native tool."""

    @classmethod
    def supported_native_tools(cls):
        return frozenset()


def _search_call(info, words: str) -> ToolCallPart:
    tool = next(t for t in info.function_tools if t.name == SEARCH)
    properties = tool.parameters_json_schema.get("properties", {})
    key = next(iter(properties))
    value = [words] if properties[key].get("type") == "array" else words
    return ToolCallPart(SEARCH, {key: value})


class Script:
    """A model that searches for ``words``, calls ``target`` once it is offered, then answers."""

    def __init__(self, words: str, target: str, args: dict) -> None:
        self.words, self.target, self.args = words, target, args
        self.requests: list = []

    def __call__(self, messages, info):
        self.requests.append(info)
        names = {t.name for t in info.function_tools}
        returned = [
            p for m in messages for p in getattr(m, "parts", []) if isinstance(p, ToolReturnPart)
        ]
        if any(p.tool_name == self.target for p in returned):
            return ModelResponse(parts=[TextPart(f"done: {returned[-1].content}")])
        if self.target in names:
            return ModelResponse(parts=[ToolCallPart(self.target, self.args)])
        return ModelResponse(parts=[_search_call(info, self.words)])


def _prepared(owner, org, agent, approval_mode="follow"):
    run = run_create(
        actor=owner,
        organization=org,
        agent=agent,
        input="refund invoice 77",
        surface="chat",
        approval_mode=approval_mode,
    )
    return prepare(run)


def _drive(prepared, script):
    async def go():
        return await prepared.agent.run(
            prepared.user_prompt, model=LocalOnlyModel(script), usage_limits=prepared.usage_limits
        )

    return async_to_sync(go)()


def test_tool_search_defers_mcp_tools_and_finds_one_among_a_hundred(
    org, owner, catalog, listed_connection
):
    connection = listed_connection(owner, org, catalog.http_url, name="Catalog", token=None)
    assert len(connection.tools) == 100
    agent = published_agent(
        org,
        created_by=owner,
        capabilities=[
            {"id": "tool_search", "config": {"strategy": "keywords", "max_results": 5}},
            {"id": "planning"},
        ],
        mcp_connections=[connection.pk],
    )
    script = Script("refund invoice", "catalog_refund_invoice", {"invoice_id": "77"})
    result = _drive(_prepared(owner, org, agent), script)

    first = {t.name for t in script.requests[0].function_tools}
    # The registry's own tools stay visible; none of the hundred is carried before a search.
    assert SEARCH in first and "add_task" in first
    assert not any(name.startswith("catalog_") for name in first)
    assert "catalog_refund_invoice" in {t.name for t in script.requests[-1].function_tools}
    assert "invoice 77 refunded" in result.output


def test_without_tool_search_every_mcp_tool_is_offered_directly(
    org, owner, catalog, listed_connection
):
    connection = listed_connection(owner, org, catalog.http_url, name="Catalog", token=None)
    agent = published_agent(org, created_by=owner, mcp_connections=[connection.pk])
    script = Script("refund", "catalog_refund_invoice", {"invoice_id": "1"})
    _drive(_prepared(owner, org, agent), script)

    first = {t.name for t in script.requests[0].function_tools}
    assert SEARCH not in first
    assert len([n for n in first if n.startswith("catalog_")]) == 100


def test_a_discovered_tool_keeps_its_rename_and_the_gate_still_matches_it(
    org, owner, catalog, listed_connection
):
    connection = listed_connection(owner, org, catalog.http_url, name="Catalog", token=None)
    agent = published_agent(
        org,
        created_by=owner,
        capabilities=[{"id": "tool_search"}],
        mcp_connections=[
            {"id": connection.pk, "tool_overrides": {"refund_invoice": {"name": "give_money_back"}}}
        ],
    )
    script = Script("refund invoice", "give_money_back", {"invoice_id": "9"})
    result = _drive(_prepared(owner, org, agent, approval_mode="ask_all"), script)

    # Ask about everything held the discovered tool under its renamed name; the search itself
    # was not gated.
    assert isinstance(result.output, DeferredToolRequests)
    assert [c.tool_name for c in result.output.approvals] == ["give_money_back"]
    assert json.loads(result.output.approvals[0].args_as_json_str()) == {"invoice_id": "9"}


def test_a_native_only_strategy_on_a_model_without_it_is_refused_at_assembly(
    org, owner, catalog, listed_connection
):
    connection = listed_connection(owner, org, catalog.http_url, name="Catalog", token=None)
    agent = published_agent(
        org,
        created_by=owner,
        capabilities=[{"id": "tool_search", "config": {"strategy": "bm25"}}],
        mcp_connections=[connection.pk],
    )
    with pytest.raises(RunNotRunnable, match="Anthropic's native bm25"):
        _prepared(owner, org, agent)
