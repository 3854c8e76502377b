"""Deciding over the API, and resuming: approve runs the stored arguments, reject is relayed."""

import datetime as dt

import pytest
from django.utils import timezone

from apps.agents.models import AgentStatus
from apps.approvals import services
from apps.approvals.models import ToolApproval
from apps.audit.models import AuditEntry
from apps.runs.models import Run, RunStep
from apps.runs.resume import run_resume

from .factories import ADD_ONE, ADD_TWO, gated_agent, run_now


def decide(client, approval_id, decision, note=""):
    return client.post(
        f"/api/v1/approvals/{approval_id}/decide/",
        {"decision": decision, "note": note},
        format="json",
    )


@pytest.mark.django_db
def test_the_queue_lists_pending_calls_oldest_first_with_the_age_of_the_oldest_wait(
    org, member, operator, client_for
):
    agent = gated_agent(org)
    first = run_now(member, org, agent, ADD_ONE)
    second = run_now(member, org, agent, ADD_ONE)
    ToolApproval.objects.filter(run=first).update(created_at=timezone.now() - dt.timedelta(hours=2))

    body = client_for(operator, org).get("/api/v1/approvals/").json()
    assert [row["run_id"] for row in body["results"]] == [first.pk, second.pk]
    assert body["oldest_pending_age_seconds"] >= 7200
    row = body["results"][0]
    assert row["agent_name"] == "Gated" and row["triggered_by_email"] == member.email
    assert row["arguments"] == {"content": "Email the customer"}

    newest = (
        client_for(operator, org).get("/api/v1/approvals/?oldest_first=false").json()["results"]
    )
    assert [r["run_id"] for r in newest] == [second.pk, first.pk]


@pytest.mark.django_db
def test_the_queue_filters_by_status_initiator_and_created_window(
    org, member, owner, operator, client_for
):
    agent = gated_agent(org)
    mine = run_now(member, org, agent, ADD_ONE)
    theirs = run_now(owner, org, agent, ADD_ONE)
    client = client_for(operator, org)
    approval = ToolApproval.objects.get(run=theirs)
    assert decide(client, approval.pk, "reject", "not today").status_code == 200

    assert [
        r["run_id"]
        for r in client.get(f"/api/v1/approvals/?triggered_by_user_id={member.pk}").json()[
            "results"
        ]
    ] == [mine.pk]
    log = client.get("/api/v1/approvals/?status=approved&status=rejected").json()["results"]
    assert [(r["run_id"], r["status"], r["note"], r["decided_by_email"]) for r in log] == [
        (theirs.pk, "rejected", "not today", operator.email)
    ]
    today = timezone.localdate().isoformat()
    assert (
        len(
            client.get(
                f"/api/v1/approvals/?created_from={today}&created_to={today}&status=pending&status=rejected"
            ).json()["results"]
        )
        == 2
    )
    assert client.get("/api/v1/approvals/?created_to=2000-01-01").json()["results"] == []


@pytest.mark.django_db
@pytest.mark.parametrize(
    "query",
    [
        "status=maybe",
        "triggered_by_user_id=abc",
        "created_from=yesterday",
        "oldest_first=sometimes",
    ],
)
def test_a_query_value_outside_its_type_is_a_422(org, operator, client_for, query):
    assert client_for(operator, org).get(f"/api/v1/approvals/?{query}").status_code == 422


@pytest.mark.django_db
def test_the_queue_needs_approvals_decide_and_hides_other_organizations(
    org, other_org, member, builder, operator, outsider, client_for
):
    run = run_now(member, org, gated_agent(org), ADD_ONE)
    approval = ToolApproval.objects.get(run=run)

    assert client_for(builder, org).get("/api/v1/approvals/").status_code == 403
    assert decide(client_for(builder, org), approval.pk, "approve").status_code == 403
    assert client_for(operator, org).get("/api/v1/approvals/").status_code == 200
    assert client_for(outsider, other_org).get("/api/v1/approvals/").json()["results"] == []
    other = decide(client_for(outsider, other_org), approval.pk, "approve")
    missing = decide(client_for(outsider, other_org), 999_999, "approve")
    assert other.status_code == missing.status_code == 404
    assert other.json() == missing.json()
    assert client_for(outsider, other_org).get(f"/api/v1/runs/{run.pk}/parked/").status_code == 404


@pytest.mark.django_db
def test_a_second_decision_is_refused(org, member, operator, owner, client_for):
    run = run_now(member, org, gated_agent(org), ADD_ONE)
    approval = ToolApproval.objects.get(run=run)

    first = decide(client_for(operator, org), approval.pk, "approve", "fine")
    second = decide(client_for(owner, org), approval.pk, "reject")

    assert first.status_code == 200 and first.json()["status"] == "approved"
    assert second.status_code == 409
    approval.refresh_from_db()
    assert (
        approval.status == "approved"
        and approval.decided_by == operator
        and approval.note == "fine"
    )
    assert AuditEntry.objects.filter(action="approval.approve", actor=operator).count() == 1


@pytest.mark.django_db
def test_a_decision_after_the_sweep_took_the_call_is_refused(
    org, member, operator, client_for, settings
):
    run = run_now(member, org, gated_agent(org), ADD_ONE)
    approval = ToolApproval.objects.get(run=run)
    services.approvals_expire_stale(
        now=timezone.now() + dt.timedelta(hours=settings.APPROVAL_EXPIRY_HOURS + 1)
    )

    response = decide(client_for(operator, org), approval.pk, "approve")
    assert response.status_code == 409
    approval.refresh_from_db()
    assert approval.status == "expired" and approval.decided_by is None


@pytest.mark.django_db
def test_parked_answers_the_pending_calls_and_nothing_for_a_run_not_parked(
    org, member, operator, client_for
):
    agent = gated_agent(org)
    parked = run_now(member, org, agent, ADD_TWO)
    done = run_now(member, org, gated_agent(org, tools=()), ADD_ONE)
    client = client_for(operator, org)

    body = client.get(f"/api/v1/runs/{parked.pk}/parked/").json()
    assert [c["arguments"]["content"] for c in body["calls"]] == [
        "Email the customer",
        "Email the account manager",
    ]
    assert client.get(f"/api/v1/runs/{done.pk}/parked/").json()["calls"] == []
    assert client_for(member, org).get(f"/api/v1/runs/{parked.pk}/parked/").status_code == 403


@pytest.mark.django_db
def test_approving_executes_the_stored_arguments_and_settles_the_approved_step(
    org, member, operator, client_for, resume_over_api
):
    run = run_now(member, org, gated_agent(org), ADD_ONE)
    started_at = run.started_at
    approval = ToolApproval.objects.get(run=run)
    # What the person reads is what runs: the row's arguments, whatever the history says.
    ToolApproval.objects.filter(pk=approval.pk).update(
        arguments={"content": "Email the customer (checked)"}
    )
    client = client_for(operator, org)
    assert decide(client, approval.pk, "approve").status_code == 200

    response = resume_over_api(client, run.pk)

    # Accepted and queued like a decision: the answer is the run, still parked; a worker continues.
    assert response.status_code == 202, response.content
    assert response.json()["id"] == run.pk
    assert response.json()["status"] == "awaiting_approval"
    run.refresh_from_db()
    assert run.status == "completed"
    assert run.started_at == started_at
    assert "Email the customer (checked)" in run.output
    step = RunStep.objects.get(run=run, kind="tool_call")
    assert step.detail["tool_call_id"] == approval.tool_call_id
    assert (
        step.detail["status"] == "settled"
        and "Email the customer (checked)" in step.detail["result"]
    )
    assert RunStep.objects.filter(run=run, kind="tool_call").count() == 1
    approval.refresh_from_db()
    assert "Email the customer (checked)" in approval.result
    assert run.paused_state is None


@pytest.mark.django_db
def test_rejecting_replays_a_denial_the_model_relays(org, member, operator, client_for):
    run = run_now(member, org, gated_agent(org), ADD_ONE)
    approval = ToolApproval.objects.get(run=run)
    decide(client_for(operator, org), approval.pk, "reject", "We do not email customers on Sundays")

    run_resume(run_id=run.pk)

    run.refresh_from_db()
    assert run.status == "completed"
    assert "rejected this call" in run.output and "Sundays" in run.output
    assert RunStep.objects.get(run=run, kind="tool_call").detail["outcome"] == "denied"


@pytest.mark.django_db
def test_two_parked_calls_resume_only_when_both_are_decided(
    org, member, operator, client_for, resume_over_api
):
    run = run_now(member, org, gated_agent(org), ADD_TWO)
    first, second = ToolApproval.objects.filter(run=run).order_by("pk")
    client = client_for(operator, org)
    decide(client, first.pk, "approve")

    early = resume_over_api(client, run.pk)
    assert early.status_code == 409

    decide(client, second.pk, "reject")
    assert resume_over_api(client, run.pk).status_code == 202
    assert Run.objects.get(pk=run.pk).status == "completed"
    settled = RunStep.objects.filter(run=run, kind="tool_call", detail__status="settled")
    assert {s.detail["outcome"] for s in settled} == {"success", "denied"}


@pytest.mark.django_db
def test_a_spec_that_no_longer_builds_refuses_the_attempt_and_keeps_the_run_resumable(
    org, member, operator, client_for, resume_over_api
):
    agent = gated_agent(org)
    run = run_now(member, org, agent, ADD_ONE)
    approval = ToolApproval.objects.get(run=run)
    client = client_for(operator, org)
    decide(client, approval.pk, "approve")
    agent.status = AgentStatus.ARCHIVED
    agent.save(update_fields=["status"])

    refused = resume_over_api(client, run.pk)

    assert refused.status_code == 409
    assert "archived" in refused.json()["detail"]
    run.refresh_from_db()
    approval.refresh_from_db()
    assert run.status == "awaiting_approval" and approval.status == "approved"

    agent.status = AgentStatus.ACTIVE
    agent.save(update_fields=["status"])
    again = resume_over_api(client, run.pk)
    assert again.status_code == 202
    assert Run.objects.get(pk=run.pk).status == "completed"


@pytest.mark.django_db
def test_resume_reports_the_continuations_own_tool_calls_in_order(
    org, member, operator, client_for, echo_toolset, resume_over_api
):
    """A continuation that calls more (ungated) tools says so: steps, in order, with their returns."""
    from tests.runs.factories import published_agent

    agent = published_agent(org, capabilities=[{"id": "planning"}])
    run = run_now(
        member, org, agent, '/call echo {"text": "one"}', surface="chat", approval_mode="ask_all"
    )
    approval = ToolApproval.objects.get(run=run)
    decide(client_for(operator, org), approval.pk, "approve")
    assert resume_over_api(client_for(operator, org), run.pk).status_code == 202
    step = RunStep.objects.get(run=run, kind="tool_call")
    assert step.detail["status"] == "settled" and step.detail["result"] == "echo: one"
    assert Run.objects.get(pk=run.pk).status == "completed"
