"""A conversation's approval mode: follow, approve everything, ask about everything."""

import pytest

from apps.approvals.models import ToolApproval

from .factories import ADD_ONE, ADD_TWO, gated_agent, run_now


@pytest.fixture
def waiving_org(org):
    org.chat_may_waive_approvals = True
    org.save(update_fields=["chat_may_waive_approvals"])
    return org


@pytest.mark.django_db
def test_follow_is_the_default_and_the_spec_decides(org, owner):
    run = run_now(owner, org, gated_agent(org), ADD_ONE, surface="chat")
    assert run.approval_mode == "follow"
    assert run.status == "awaiting_approval"


@pytest.mark.django_db
def test_approve_everything_runs_gated_calls_and_writes_standing_rows(waiving_org, owner):
    run = run_now(
        owner,
        waiving_org,
        gated_agent(waiving_org),
        ADD_TWO,
        surface="chat",
        approval_mode="approve_all",
    )

    assert run.status == "completed", run.error
    rows = list(ToolApproval.objects.filter(run=run).order_by("pk"))
    assert len(rows) == 2
    assert {r.status for r in rows} == {"approved"}
    assert {r.decided_via for r in rows} == {"standing"}
    assert {r.decided_by_id for r in rows} == {owner.pk}
    assert {r.arguments["content"] for r in rows} == {
        "Email the customer",
        "Email the account manager",
    }


@pytest.mark.django_db
def test_the_approvals_log_says_a_standing_row_in_words(waiving_org, owner, client_for):
    run_now(
        owner,
        waiving_org,
        gated_agent(waiving_org),
        ADD_ONE,
        surface="chat",
        approval_mode="approve_all",
    )

    rows = (
        client_for(owner, waiving_org).get("/api/v1/approvals/?status=approved").json()["results"]
    )
    assert rows[0]["decided_via"] == "standing"
    assert rows[0]["decided_in_words"].startswith(
        "Approved by standing consent for the conversation, given by"
    )


@pytest.mark.django_db
def test_approve_everything_without_approvals_decide_is_refused_with_a_sentence(
    waiving_org, builder
):
    run = run_now(
        builder,
        waiving_org,
        gated_agent(waiving_org),
        ADD_ONE,
        surface="chat",
        approval_mode="approve_all",
    )

    assert run.status == "failed" and run.stop_reason == "not_runnable"
    assert "needs the approvals:decide permission" in run.error
    assert not ToolApproval.objects.filter(run=run).exists()
    assert run.request_count == 0


@pytest.mark.django_db
def test_approve_everything_is_refused_when_the_organization_does_not_allow_it(org, owner):
    assert not org.chat_may_waive_approvals
    run = run_now(
        owner, org, gated_agent(org), ADD_ONE, surface="chat", approval_mode="approve_all"
    )

    assert run.status == "failed"
    assert "does not let a chat approve everything" in run.error


@pytest.mark.django_db
@pytest.mark.parametrize("surface", ["api", "slack", "schedule", "webhook", "embed"])
def test_only_a_web_chat_session_may_approve_everything(waiving_org, owner, surface):
    run = run_now(
        owner,
        waiving_org,
        gated_agent(waiving_org),
        ADD_ONE,
        surface=surface,
        approval_mode="approve_all",
    )

    assert run.status == "failed"
    assert "Only a web chat session may approve everything" in run.error


@pytest.mark.django_db
def test_ask_about_everything_gates_tools_the_spec_left_ungated_and_needs_no_permission(
    org, member
):
    agent = gated_agent(org, tools=())  # nothing gated by the spec
    run = run_now(member, org, agent, ADD_ONE, surface="chat", approval_mode="ask_all")

    assert run.status == "awaiting_approval"
    assert ToolApproval.objects.get(run=run).tool_name == "add_task"


@pytest.mark.django_db
def test_ask_about_everything_reaches_tools_outside_any_capability(org, member, echo_toolset):
    from tests.runs.factories import published_agent

    agent = published_agent(
        org, capabilities=[{"id": "planning"}]
    )  # echo: a tool outside any capability
    followed = run_now(member, org, agent, '/call echo {"text": "hi"}', surface="chat")
    asked = run_now(
        member, org, agent, '/call echo {"text": "hi"}', surface="chat", approval_mode="ask_all"
    )

    assert followed.status == "completed"
    assert asked.status == "awaiting_approval"
    row = ToolApproval.objects.get(run=asked)
    assert (row.tool_name, row.tool_id) == ("echo", "")
