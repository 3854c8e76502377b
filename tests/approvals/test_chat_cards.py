"""Chat's side of approvals (issue 6): the approval mode a chat turn is sent with, the refusal
that comes back as the turn's sentence, the approval and question cards drawn again after a
reload, deciding from a card without JavaScript, and the Activity tab that is the queue."""

import pytest
from django.test import Client

from apps.approvals.models import Question, ToolApproval
from apps.orgs.models import Organization
from apps.runs.events import frames_after
from apps.runs.models import Run
from apps.runs.runner import execute_run
from tests.runs.factories import published_agent

from .factories import ADD_ONE, gated_agent, run_now

pytestmark = pytest.mark.django_db


def console(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def send(user, agent, message, **extra):
    return console(user).post(
        "/chat/send/",
        {"agent_id": agent.pk, "message": message, **extra},
        headers={"accept": "application/json"},
    )


# --- the approval mode --------------------------------------------------------------------------


def test_chat_offers_the_three_approval_modes_follow_first(org, owner):
    # Issue 15: "Approve everything" only where the person may choose it (approvals:decide and
    # the organization's waiver); tests/console/test_chat_page.py covers the other cases.
    org.chat_may_waive_approvals = True
    org.save(update_fields=["chat_may_waive_approvals"])
    published_agent(org)
    page = console(owner).get("/chat/").content.decode()
    assert 'name="approval_mode"' in page
    select = page[page.index('id="chat-approval-mode"') :]
    assert (
        select.index("Follow the agent")
        < select.index("Approve everything")
        < select.index("Ask about everything")
    )
    assert '<option value="follow" selected>' in page


def test_a_chat_turn_is_sent_with_its_approval_mode(org, member):
    agent = published_agent(org)
    response = send(member, agent, "hello", approval_mode="ask_all")
    assert response.status_code == 201
    run = Run.objects.get(pk=response.json()["run_id"])
    assert run.approval_mode == "ask_all" and run.surface == "chat"
    # The next turn of the conversation keeps the mode it was last sent with.
    page = console(member).get(f"/chat/{run.conversation_id}/").content.decode()
    assert '<option value="ask_all" selected>' in page


def test_a_chat_turn_without_a_mode_follows_the_agent(org, member):
    agent = published_agent(org)
    run = Run.objects.get(pk=send(member, agent, "hello").json()["run_id"])
    assert run.approval_mode == "follow"


def test_an_unknown_mode_is_refused_before_a_run_exists(org, member):
    agent = published_agent(org)
    response = send(member, agent, "hello", approval_mode="whatever")
    assert response.status_code == 422
    assert "not an approval mode" in response.json()["error"]
    assert not Run.objects.exists()


def test_approve_everything_without_the_permission_fails_the_turn_with_its_sentence(org, member):
    Organization.objects.filter(pk=org.pk).update(chat_may_waive_approvals=True)
    agent = gated_agent(org)
    run_id = send(member, agent, ADD_ONE, approval_mode="approve_all").json()["run_id"]
    execute_run(run_id)

    run = Run.objects.get(pk=run_id)
    assert run.status == "failed" and "approvals:decide" in run.error
    finished = [f for f in frames_after(run_id) if f["type"] == "run_finished"][-1]
    assert finished["status"] == "failed" and "approvals:decide" in finished["error"]
    assert not ToolApproval.objects.exists()
    # Reopened, the turn still says why it did not run.
    page = console(member).get(f"/chat/{run.conversation_id}/").content.decode()
    assert "approvals:decide permission, which you do not have" in page


def test_approve_everything_in_an_organization_that_does_not_allow_it_is_refused(org, owner):
    agent = gated_agent(org)
    run_id = send(owner, agent, ADD_ONE, approval_mode="approve_all").json()["run_id"]
    execute_run(run_id)
    run = Run.objects.get(pk=run_id)
    assert run.status == "failed" and "chat may waive" in run.error


def test_approve_everything_where_allowed_runs_the_gated_call_as_a_standing_row(org, owner):
    Organization.objects.filter(pk=org.pk).update(chat_may_waive_approvals=True)
    agent = gated_agent(org)
    run_id = send(owner, agent, ADD_ONE, approval_mode="approve_all").json()["run_id"]
    execute_run(run_id)
    assert Run.objects.get(pk=run_id).status == "completed"
    row = ToolApproval.objects.get(run_id=run_id)
    assert row.decided_via == "standing" and row.decided_by == owner


def test_the_api_passes_the_approval_mode_and_refuses_an_unknown_one(
    org, member, owner, client_for
):
    agent = gated_agent(org)
    response = client_for(member, org).post(
        "/api/v1/runs/",
        {"agent_id": agent.pk, "input": "hi", "approval_mode": "ask_all"},
        format="json",
    )
    assert response.status_code == 201, response.content
    assert response.json()["approval_mode"] == "ask_all"
    assert Run.objects.get(pk=response.json()["id"]).approval_mode == "ask_all"

    bad = client_for(member, org).post(
        "/api/v1/runs/",
        {"agent_id": agent.pk, "input": "hi", "approval_mode": "never"},
        format="json",
    )
    assert bad.status_code == 422 and "approval_mode" in bad.json()

    # Only a web chat session may approve everything: over the API the turn says so.
    Organization.objects.filter(pk=org.pk).update(chat_may_waive_approvals=True)
    waived = client_for(owner, org).post(
        "/api/v1/runs/",
        {"agent_id": agent.pk, "input": ADD_ONE, "approval_mode": "approve_all"},
        format="json",
    )
    execute_run(waived.json()["id"])
    run = Run.objects.get(pk=waived.json()["id"])
    assert run.status == "failed" and "Only a web chat session may approve everything" in run.error


# --- cards after a reload -------------------------------------------------------------------------


def test_a_parked_chat_run_shows_its_approval_card_with_the_controls_for_a_decider(org, owner):
    agent = gated_agent(org)
    run = run_now(owner, org, agent, ADD_ONE, surface="chat")
    assert run.status == "awaiting_approval"
    approval = ToolApproval.objects.get(run=run)

    page = console(owner).get(f"/chat/{run.conversation_id}/").content.decode()
    assert f'id="approval-card-{approval.pk}"' in page
    assert "add_task" in page and "Email the customer" in page
    assert f'action="/approvals/{approval.pk}/decide/"' in page
    assert f'name="next" value="/chat/{run.conversation_id}/"' in page
    assert 'value="approve">Approve</button>' in page and 'value="reject"' in page
    assert f'data-live-run="{run.pk}"' in page


def test_someone_without_approvals_decide_sees_who_can_approve_and_no_controls(org, member):
    agent = gated_agent(org)
    run = run_now(member, org, agent, ADD_ONE, surface="chat")
    page = console(member).get(f"/chat/{run.conversation_id}/").content.decode()
    assert "approval-card-" in page and "Email the customer" in page
    assert "Waiting for an owner, admin or operator" in page
    assert "/decide/" not in page


def test_a_decided_run_shows_its_card_resolved_after_a_reload(org, owner):
    # Issue 15: the reload shows what was seen live — the card, resolved, with no decision form.
    agent = gated_agent(org)
    run = run_now(owner, org, agent, ADD_ONE, surface="chat")
    approval = ToolApproval.objects.get(run=run)
    Run.objects.filter(pk=run.pk).update(status="completed")
    ToolApproval.objects.filter(pk=approval.pk).update(status="approved")
    page = console(owner).get(f"/chat/{run.conversation_id}/").content.decode()
    card = page.split(f'id="approval-card-{approval.pk}"', 1)[1].split("</div>", 1)[0]
    assert 'class="card approval-card resolved"' in page
    assert 'class="decide"' not in card and "Approve</button>" not in card


def test_deciding_from_the_chat_card_without_javascript_returns_to_the_chat(org, owner):
    agent = gated_agent(org)
    run = run_now(owner, org, agent, ADD_ONE, surface="chat")
    approval = ToolApproval.objects.get(run=run)
    back = f"/chat/{run.conversation_id}/"
    response = console(owner).post(
        f"/approvals/{approval.pk}/decide/", {"decision": "approve", "note": "ok", "next": back}
    )
    assert response.status_code == 302 and response["Location"] == back
    assert ToolApproval.objects.get(pk=approval.pk).status == "approved"


def test_a_decision_never_redirects_off_site(org, owner):
    agent = gated_agent(org)
    run = run_now(owner, org, agent, ADD_ONE, surface="chat")
    approval = ToolApproval.objects.get(run=run)
    response = console(owner).post(
        f"/approvals/{approval.pk}/decide/", {"decision": "reject", "next": "https://evil.test/"}
    )
    assert response["Location"] == "/approvals/"


def test_the_approval_frame_carries_what_the_card_draws(org, owner):
    run = run_now(owner, org, gated_agent(org), ADD_ONE, surface="chat")
    frame = next(f for f in frames_after(run.pk) if f["type"] == "tool_approval_required")
    approval = ToolApproval.objects.get(run=run)
    assert frame["approval_id"] == approval.pk
    assert frame["tool_name"] == "add_task" and frame["args"] == {"content": "Email the customer"}


def test_a_question_card_comes_back_for_the_person_asked(org, member):
    agent = published_agent(org, name="Asker", capabilities=[{"id": "ask_user"}])
    run = run_now(member, org, agent, "/ask Should I close the account?", surface="chat")
    assert run.status == "awaiting_answer"
    question = Question.objects.get(run=run)

    page = console(member).get(f"/chat/{run.conversation_id}/").content.decode()
    assert f'id="question-card-{question.pk}"' in page
    assert "Should I close the account?" in page
    assert 'type="radio" name="q0" value="Yes"' in page and 'value="No"' in page
    assert f'data-run-id="{run.pk}"' in page and 'class="answer"' in page


# --- Activity ?tab=approvals and /runs ----------------------------------------------------------


def test_the_activity_approvals_tab_is_the_queue_for_a_decider(org, owner, operator):
    run = run_now(owner, org, gated_agent(org), ADD_ONE, surface="chat")
    approval = ToolApproval.objects.get(run=run)
    page = console(operator).get("/activity/?tab=approvals").content.decode()
    assert 'id="approvals-tab"' in page and 'id="view-approvals"' in page
    assert f'id="approval-{approval.pk}"' in page and "Oldest wait:" in page
    assert 'name="next" value="/activity/?tab=approvals"' in page
    assert 'id="runs-table"' not in page


def test_the_approvals_tab_opens_the_run_history_for_someone_who_cannot_decide(
    org, builder, member
):
    for user in (builder, member):
        page = console(user).get("/activity/?tab=approvals").content.decode()
        assert 'id="runs-table"' in page
        assert 'id="approvals-tab"' not in page and 'id="view-approvals"' not in page


def test_the_history_offers_the_approvals_tab_to_a_decider_only(org, admin, builder):
    assert 'id="view-approvals"' in console(admin).get("/activity/").content.decode()
    assert 'id="view-approvals"' not in console(builder).get("/activity/").content.decode()


def test_deciding_from_the_activity_tab_returns_to_the_tab(org, owner):
    run = run_now(owner, org, gated_agent(org), ADD_ONE, surface="chat")
    approval = ToolApproval.objects.get(run=run)
    response = console(owner).post(
        f"/approvals/{approval.pk}/decide/",
        {"decision": "approve", "next": "/activity/?tab=approvals"},
    )
    assert response["Location"] == "/activity/?tab=approvals"


def test_the_alert_link_to_runs_opens_activity_keeping_the_query(org, owner):
    query = f"tab=approvals&org={org.pk}"
    for path in ("/runs", "/runs/"):
        response = console(owner).get(f"{path}?{query}")
        assert response.status_code == 302 and response["Location"] == f"/activity/?{query}"
    page = console(owner).get(f"/runs?{query}", follow=True).content.decode()
    assert 'id="approvals-tab"' in page
    assert console(owner).get("/runs/")["Location"] == "/activity/"
