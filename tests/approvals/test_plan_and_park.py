"""Seed 000, "Planificación": the plan belongs to the conversation, and a turn that ends on a
park keeps its in_progress step (a failed one would put it back to pending)."""

import json

import pytest

from apps.approvals.models import ToolApproval
from apps.runs.models import Conversation, Run

from .factories import ADD_ONE, gated_agent, run_now
from .test_decide_and_resume import decide

pytestmark = pytest.mark.django_db


def test_the_plan_survives_a_park_and_the_resume_writes_it_back(
    org, member, operator, client_for, resume_over_api
):
    agent = gated_agent(org)  # add_task needs approval; write_plan does not
    conversation = Conversation.objects.create(
        organization=org, agent=agent, user=member, surface="chat"
    )
    items = [{"content": "Draw the chart", "status": "in_progress"}]
    first = run_now(
        member,
        org,
        agent,
        f"/call write_plan {json.dumps({'items': items})}",
        surface="chat",
        conversation=conversation,
    )
    assert first.status == "completed"

    parked = run_now(member, org, agent, ADD_ONE, surface="chat", conversation=conversation)
    assert parked.status == "awaiting_approval"
    conversation.refresh_from_db()
    assert [i["status"] for i in conversation.plan] == ["in_progress"]  # a park keeps it
    assert [i["content"] for i in parked.paused_state["plan"]] == ["Draw the chart"]

    decide(client_for(operator, org), ToolApproval.objects.get(run=parked).pk, "approve")
    assert resume_over_api(client_for(operator, org), parked.pk).status_code == 202
    assert Run.objects.get(pk=parked.pk).status == "completed"
    conversation.refresh_from_db()
    assert [i["content"] for i in conversation.plan] == ["Draw the chart", "Email the customer"]
    assert conversation.plan[0]["status"] == "in_progress"
