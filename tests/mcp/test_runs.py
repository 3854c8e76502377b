"""MCP tools in real runs: a real MCP server on 127.0.0.1, the real runner, the offline model.

The offline model calls a tool by the name it sees (``/call NAME {args}``) and answers quoting
the result, so each test reads what the server answered in the run's output.
"""

from __future__ import annotations

import pytest

from apps.approvals.models import ToolApproval
from apps.mcp.models import McpConnection
from apps.runs.models import Run
from apps.runs.runner import execute_run, prepare
from apps.runs.services import run_create
from tests.runs.factories import published_agent

from .conftest import TOKEN

pytestmark = pytest.mark.django_db


def run_now(actor, organization, agent, text, *, surface="api", approval_mode="follow") -> Run:
    run = run_create(
        actor=actor,
        organization=organization,
        agent=agent,
        input=text,
        surface=surface,
        approval_mode=approval_mode,
    )
    execute_run(run.pk)
    return Run.objects.get(pk=run.pk)


def offered_names(prepared) -> set[str]:
    """The tool names the first model request of ``prepared`` carries."""
    from asgiref.sync import async_to_sync
    from pydantic_ai.messages import ModelResponse, TextPart
    from pydantic_ai.models.function import FunctionModel

    seen = []

    def first(messages, info):
        seen.append(info)
        return ModelResponse(parts=[TextPart("done")])

    async def go():
        await prepared.agent.run(prepared.user_prompt, model=FunctionModel(first))

    async_to_sync(go)()
    return {tool.name for tool in seen[0].function_tools}


def test_a_bound_connections_tools_are_offered_under_its_prefix_and_called(
    org, owner, warehouse, listed_connection
):
    connection = listed_connection(owner, org, warehouse.http_url, prefix="wh")
    agent = published_agent(org, created_by=owner, mcp_connections=[connection.pk])

    prepared = prepare(run_create(actor=owner, organization=org, agent=agent, input="hi"))
    assert {"wh_add", "wh_stock_count", "wh_slow_report", "wh_explode"} <= offered_names(prepared)

    run = run_now(owner, org, agent, '/call wh_add {"a": 2, "b": 40}')
    assert run.status == "completed", run.error
    assert "42" in run.output
    # The token travelled as a bearer header, to this server only.
    assert f"Bearer {TOKEN}" in warehouse.gate.seen_tokens


def test_the_sse_transport_works_the_same(org, owner, warehouse, listed_connection):
    connection = listed_connection(
        owner, org, warehouse.sse_url, name="Warehouse SSE", prefix="whs", transport="sse"
    )
    agent = published_agent(org, created_by=owner, mcp_connections=[{"id": connection.pk}])

    run = run_now(owner, org, agent, '/call whs_stock_count {"sku": "A-7"}')
    assert run.status == "completed", run.error
    assert "A-7: 42 units in stock" in run.output


def test_a_binding_renames_a_tool_and_the_old_name_is_gone(
    org, owner, warehouse, listed_connection
):
    connection = listed_connection(owner, org, warehouse.http_url, prefix="wh")
    agent = published_agent(
        org,
        created_by=owner,
        mcp_connections=[
            {
                "id": connection.pk,
                "tool_overrides": {"stock_count": {"name": "inventory", "description": "Stock."}},
            }
        ],
    )
    names = offered_names(
        prepare(run_create(actor=owner, organization=org, agent=agent, input="x"))
    )
    assert "inventory" in names and "wh_stock_count" not in names

    run = run_now(owner, org, agent, '/call inventory {"sku": "B-1"}')
    assert run.status == "completed", run.error
    assert "B-1: 42 units in stock" in run.output


def test_only_the_tools_fixed_on_the_connection_are_offered(
    org, owner, warehouse, listed_connection
):
    connection = listed_connection(owner, org, warehouse.http_url, prefix="wh")
    # As if the list was taken before the server grew its other tools.
    McpConnection.objects.filter(pk=connection.pk).update(
        tools=[t for t in connection.tools if t["name"] == "add"]
    )
    agent = published_agent(org, created_by=owner, mcp_connections=[connection.pk])
    names = offered_names(
        prepare(run_create(actor=owner, organization=org, agent=agent, input="x"))
    )
    assert {n for n in names if n.startswith("wh_")} == {"wh_add"}


def test_a_failing_tool_is_a_result_the_model_reads(org, owner, warehouse, listed_connection):
    connection = listed_connection(owner, org, warehouse.http_url, prefix="wh")
    agent = published_agent(org, created_by=owner, mcp_connections=[connection.pk])

    run = run_now(owner, org, agent, "/call wh_explode {}")
    assert run.status == "completed", run.error
    assert "the warehouse is on fire" in str(run.transcript)


def test_a_slow_tool_is_abandoned_at_the_limit_and_the_run_goes_on(
    org, owner, warehouse, listed_connection
):
    connection = listed_connection(owner, org, warehouse.http_url, prefix="wh")
    agent = published_agent(org, created_by=owner, mcp_connections=[connection.pk])

    run = run_now(owner, org, agent, '/call wh_slow_report {"seconds": 5}')
    assert run.status == "completed", run.error
    assert "did not answer within 2 seconds" in str(run.transcript)


def test_an_unreachable_server_fails_the_run_naming_the_connection(
    org, owner, warehouse, listed_connection
):
    connection = listed_connection(owner, org, warehouse.http_url, name="Old ERP", prefix="erp")
    agent = published_agent(org, created_by=owner, mcp_connections=[connection.pk])
    # The server moved: nothing answers at the stored address any more.
    McpConnection.objects.filter(pk=connection.pk).update(url="http://127.0.0.1:9/mcp")

    run = run_now(owner, org, agent, "hello")
    assert run.status == "failed" and run.stop_reason == "not_runnable"
    assert "“Old ERP” could not be reached" in run.error
    assert run.request_count == 0


def test_a_deleted_connection_refuses_the_run_with_what_to_change(
    org, owner, warehouse, listed_connection
):
    connection = listed_connection(owner, org, warehouse.http_url, prefix="wh")
    agent = published_agent(org, created_by=owner, mcp_connections=[connection.pk])
    connection.delete()

    run = run_now(owner, org, agent, "hello")
    assert run.status == "failed" and run.stop_reason == "not_runnable"
    assert "mcp_connections[0].id" in run.error and "no MCP connection" in run.error


def test_mcp_tools_are_outside_the_gate_that_follows_the_spec(
    org, owner, warehouse, listed_connection
):
    connection = listed_connection(owner, org, warehouse.http_url, prefix="wh")
    agent = published_agent(
        org,
        created_by=owner,
        # The spec gates every planning tool; that never reaches the connection's tools.
        capabilities=[{"id": "planning", "approval": "required"}],
        mcp_connections=[connection.pk],
    )
    run = run_now(owner, org, agent, '/call wh_add {"a": 1, "b": 1}', surface="chat")
    assert run.status == "completed", run.error
    assert not ToolApproval.objects.filter(run=run).exists()


def test_ask_about_everything_gates_an_mcp_tool_and_the_row_names_the_connection(
    org, owner, warehouse, listed_connection, client_for, client
):
    connection = listed_connection(owner, org, warehouse.http_url, prefix="wh")
    agent = published_agent(org, created_by=owner, mcp_connections=[connection.pk])

    run = run_now(
        owner, org, agent, '/call wh_add {"a": 1, "b": 1}', surface="chat", approval_mode="ask_all"
    )
    assert run.status == "awaiting_approval", run.error
    row = ToolApproval.objects.get(run=run)
    assert row.tool_name == "wh_add"
    assert row.tool_id == "add" and row.capability_id == f"mcp:{connection.pk}"
    assert row.arguments == {"a": 1, "b": 1}
    # The queue and the chat draw it like any parked call.
    queue = client_for(owner, org).get("/api/v1/approvals/").json()["results"]
    assert [r["tool_name"] for r in queue] == ["wh_add"]
    client.force_login(owner)
    chat = client.get(f"/chat/{run.conversation_id}/")
    assert chat.status_code == 200 and "wh_add" in chat.content.decode()


def test_an_approved_mcp_call_runs_on_the_server_when_the_run_resumes(
    org, owner, warehouse, listed_connection, client_for
):
    from apps.runs.resume import run_resume

    connection = listed_connection(owner, org, warehouse.http_url, prefix="wh")
    agent = published_agent(org, created_by=owner, mcp_connections=[connection.pk])
    run = run_now(
        owner,
        org,
        agent,
        '/call wh_add {"a": 20, "b": 22}',
        surface="chat",
        approval_mode="ask_all",
    )
    approval = ToolApproval.objects.get(run=run)
    decided = client_for(owner, org).post(
        f"/api/v1/approvals/{approval.pk}/decide/", {"decision": "approve"}, format="json"
    )
    assert decided.status_code == 200

    run_resume(run_id=run.pk)
    run.refresh_from_db()
    assert run.status == "completed", run.error
    assert "42" in run.output
    approval.refresh_from_db()
    assert approval.status == "approved" and "42" in approval.result


def test_every_agent_bound_to_a_connection_is_offered_the_same_tools(
    org, owner, warehouse, listed_connection
):
    connection = listed_connection(owner, org, warehouse.http_url, prefix="wh")
    offered = []
    for name in ("First", "Second"):
        agent = published_agent(org, name=name, created_by=owner, mcp_connections=[connection.pk])
        prepared = prepare(run_create(actor=owner, organization=org, agent=agent, input="x"))
        offered.append({n for n in offered_names(prepared) if n.startswith("wh_")})
    assert offered[0] == offered[1] == {f"wh_{t}" for t in connection.tool_names}


def test_a_personal_connection_stops_working_when_its_owner_leaves(
    org, owner, member, warehouse, listed_connection
):
    from apps.orgs.models import Membership

    personal = listed_connection(member, org, warehouse.http_url, name="Mine", scope="personal")
    agent = published_agent(org, created_by=member, mcp_connections=[personal.pk])
    assert run_now(member, org, agent, '/call mine_add {"a": 1, "b": 2}').status == "completed"

    Membership.objects.filter(organization=org, user=member).delete()
    run = run_now(owner, org, agent, '/call mine_add {"a": 1, "b": 2}')
    assert run.status == "failed" and run.stop_reason == "not_runnable"
    assert "no longer a member" in run.error
