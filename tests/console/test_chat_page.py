"""The chat page as the server draws it: one turn per run with its tool lines and resolved cards,
Markdown rendered and sanitized, titles without the offline model's commands, and only the
approval modes the person may choose (with the reason one is missing)."""

import re

import pytest

from apps.approvals.models import ToolApproval
from apps.approvals.services import approval_decide
from apps.audit.models import AuditEntry
from apps.console.templatetags.console import chat_title, render_markdown
from apps.runs.resume import run_resume
from tests.approvals.factories import ADD_ONE, gated_agent, run_now

pytestmark = pytest.mark.django_db


def _approved_conversation(org, owner):
    agent = gated_agent(org, name="Gated")
    run = run_now(owner, org, agent, ADD_ONE, surface="chat")
    approval_decide(
        actor=owner, approval=ToolApproval.objects.get(run=run), decision="approve", note="Fine"
    )
    run_resume(run_id=run.pk)
    run.refresh_from_db()
    assert run.status == "completed"
    return run


def test_a_run_that_parked_and_resumed_is_one_turn_with_its_call_once_and_the_decision(
    client, org, owner
):
    run = _approved_conversation(org, owner)
    client.force_login(owner)
    html = client.get(f"/chat/{run.conversation_id}/").content.decode()

    assert html.count('class="turn assistant') == 1
    assert html.count('class="tool-call"') == 1 and html.count('class="tool-result"') == 1
    assert "→ add_task(" in html and "← add_task:" in html
    assert 'class="card approval-card resolved"' in html
    assert "Approved by" in html and "“Fine”" in html
    # The call, then its card, then its result, then the answer: the order it happened in.
    order = [html.index(s) for s in ('class="tool-call"', "approval-card", 'class="tool-result"')]
    assert order == sorted(order)
    assert html.index('class="tool-result"') < html.index(run.output[:20].replace('"', "&quot;"))
    transcript = re.search(r'<ol id="transcript".*?</ol>', html, re.S).group(0)
    assert "Awaiting" not in transcript and "awaiting_approval" not in transcript
    # The offline model's money is simulated, and says so.
    assert "simulated" in html


def test_the_turn_endpoint_draws_one_run_and_hides_other_peoples_conversations(
    client, org, owner, admin
):
    run = _approved_conversation(org, owner)
    client.force_login(owner)
    response = client.get(f"/chat/{run.conversation_id}/runs/{run.pk}/turn/")
    assert response.status_code == 200
    assert response.content.decode().strip().startswith('<li class="turn assistant')
    client.force_login(admin)
    assert client.get(f"/chat/{run.conversation_id}/runs/{run.pk}/turn/").status_code == 404


def _mode_options(html: str) -> list[str]:
    select = re.search(r'<select id="chat-approval-mode".*?</select>', html, re.S).group(0)
    return re.findall(r'<option value="([a-z_]+)"', select)


def test_approve_everything_is_offered_only_when_the_organization_allows_it(client, org, owner):
    gated_agent(org, name="Gated")
    client.force_login(owner)
    html = client.get("/chat/").content.decode()
    assert _mode_options(html) == ["follow", "ask_all"]
    assert "Chat may waive" in html and "Settings → Organization" in html

    org.chat_may_waive_approvals = True
    org.save(update_fields=["chat_may_waive_approvals"])
    assert _mode_options(client.get("/chat/").content.decode()) == [
        "follow",
        "approve_all",
        "ask_all",
    ]


def test_a_member_is_not_offered_approve_everything_and_is_told_why(client, org, member):
    org.chat_may_waive_approvals = True
    org.save(update_fields=["chat_may_waive_approvals"])
    gated_agent(org, name="Gated")
    client.force_login(member)
    html = client.get("/chat/").content.decode()
    assert _mode_options(html) == ["follow", "ask_all"]
    assert "approvals:decide" in html


def test_the_waiver_switch_is_in_settings_for_those_who_decide_approvals(
    client, org, owner, builder
):
    client.force_login(builder)
    assert "chat_may_waive_approvals" not in client.get("/settings/organization/").content.decode()

    client.force_login(owner)
    assert "chat_may_waive_approvals" in client.get("/settings/organization/").content.decode()
    response = client.post(
        "/settings/organization/",
        {"name": "Acme", "monthly_budget_usd": "100", "chat_may_waive_approvals": "on"},
        follow=True,
    )
    assert "Organization settings saved." in response.content.decode()
    org.refresh_from_db()
    assert org.chat_may_waive_approvals is True
    entry = AuditEntry.objects.filter(organization=org, action="org.update").latest("pk")
    assert entry.details["chat_may_waive_approvals"] == {"from": False, "to": True}


def test_markdown_is_rendered_and_sanitized():
    html = render_markdown(
        "**Done** — see [the docs](https://example.com) and [this](javascript:alert(1))\n\n"
        "<script>alert(1)</script>\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n```\nprint(1)\n```"
    )
    assert "<strong>Done</strong>" in html
    assert '<a href="https://example.com" rel="noopener noreferrer nofollow">the docs</a>' in html
    assert "javascript:" not in html.replace("[this](javascript:alert(1))", "")
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert "<table>" in html and "<pre><code>print(1)" in html


@pytest.mark.parametrize(
    ("title", "cleaned"),
    [
        ('/call add_task {"content": "Email the customer"}', "add_task: Email the customer"),
        ("/steps 3", "3 steps"),
        ("/ask Should I close the account?", "Should I close the account?"),
        ("What is the time?", "What is the time?"),
        ("", "Untitled"),
    ],
)
def test_conversation_titles_read_without_the_offline_models_commands(title, cleaned):
    assert chat_title(title) == cleaned


def test_tool_results_are_drawn_by_kind_a_plan_as_a_checklist(client, org, owner):
    from tests.runs.factories import published_agent

    agent = published_agent(org, name="Planner", capabilities=[{"id": "planning"}])
    first = run_now(
        owner, org, agent, '/call add_task {"content": "Email the customer"}', surface="chat"
    )
    run_now(
        owner, org, agent, "/call read_plan {}", surface="chat", conversation=first.conversation
    )
    client.force_login(owner)
    html = client.get(f"/chat/{first.conversation_id}/").content.decode()
    checklist = html.split('<ul class="checklist">', 1)[1].split("</ul>", 1)[0]
    assert 'class="todo"' in checklist and "Email the customer" in checklist


def test_reopening_a_conversation_costs_the_same_queries_for_2_runs_or_6(client, org, owner):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from tests.runs.factories import published_agent

    agent = published_agent(org, name="Helper")
    first = run_now(owner, org, agent, "one", surface="chat")
    client.force_login(owner)
    url = f"/chat/{first.conversation_id}/"

    def queries_with(count):
        while first.conversation.runs.count() < count:
            run_now(owner, org, agent, "again", surface="chat", conversation=first.conversation)
        client.get(url)
        with CaptureQueriesContext(connection) as captured:
            assert client.get(url).status_code == 200
        return len(captured)

    assert queries_with(2) == queries_with(6)
