"""A request body key the endpoint does not take is a 422 naming it, listing the keys it takes.

DRF drops an unknown key silently: ``POST /context/`` with ``content`` where the field is ``body``
answered 201 and stored an empty file. Every request serializer inherits ``StrictJSONMixin``
(agenticos/params.py), so the refusal is written once; these tests sample it across apps.
"""

from __future__ import annotations

import pytest

from apps.approvals.models import ToolApproval
from apps.memory.models import ContextFile
from apps.orgs.models import Membership
from apps.runs.models import Run
from apps.triggers.models import Trigger
from tests.approvals.factories import ADD_ONE, gated_agent, run_now
from tests.runs.factories import published_agent


def _refused(response, key: str, accepted: set[str]) -> str:
    assert response.status_code == 422, response.content
    body = response.json()
    assert set(body) == {key}, body
    message = body[key][0]
    taken = set(message.split("it takes: ", 1)[1].rstrip(".").split(", "))
    assert taken == accepted, message
    return message


def test_a_context_file_sent_as_content_is_refused_not_stored_empty(org, builder, client_for):
    response = client_for(builder, org).post(
        "/api/v1/context/", {"name": "Style", "content": "Be brief."}, format="json"
    )
    _refused(response, "content", {"name", "description", "format", "body", "mode"})
    assert not ContextFile.objects.exists()


def test_an_unknown_key_on_an_agent_is_refused(org, builder, client_for):
    from apps.agents.models import Agent

    client = client_for(builder, org)
    response = client.post("/api/v1/agents/", {"name": "A", "colour": "blue"}, format="json")
    _refused(response, "colour", {"name", "description", "spec"})
    assert not Agent.objects.filter(name="A").exists()
    agent = published_agent(org, created_by=builder)
    response = client.patch(f"/api/v1/agents/{agent.pk}/", {"nmae": "B"}, format="json")
    _refused(response, "nmae", {"name", "description", "spec"})


def test_an_unknown_key_on_a_run_is_refused(org, builder, client_for):
    agent = published_agent(org, created_by=builder)
    response = client_for(builder, org).post(
        "/api/v1/runs/", {"agent_id": agent.pk, "prompt": "hello"}, format="json"
    )
    _refused(response, "prompt", {"agent_id", "input", "conversation_id", "approval_mode"})
    assert not Run.objects.exists()


def test_an_unknown_key_on_a_decision_is_refused_and_decides_nothing(
    org, operator, member, client_for
):
    run_now(member, org, gated_agent(org), ADD_ONE)
    approval = ToolApproval.objects.get()
    response = client_for(operator, org).post(
        f"/api/v1/approvals/{approval.pk}/decide/",
        {"decision": "approve", "comment": "fine"},
        format="json",
    )
    _refused(response, "comment", {"decision", "note"})
    approval.refresh_from_db()
    assert approval.status == "pending"


def test_an_unknown_key_on_a_trigger_is_refused(org, builder, client_for):
    agent = published_agent(org, created_by=builder)
    body = {
        "agent_id": agent.pk,
        "kind": "event",
        "name": "Deploys",
        "prompt": "Summarise",
        "cron": "0 9 * * *",
    }
    response = client_for(builder, org).post("/api/v1/triggers/", body, format="json")
    _refused(
        response,
        "cron",
        {"agent_id", "kind", "name", "prompt", "schedule", "run_as_creator"},
    )
    assert not Trigger.objects.exists()


def test_an_unknown_key_on_a_membership_is_refused(org, owner, client_for):
    response = client_for(owner, org).post(
        "/api/v1/memberships/", {"email": "new@acme.test", "rank": "admin"}, format="json"
    )
    _refused(response, "rank", {"email", "role"})
    assert not Membership.objects.filter(user__email="new@acme.test").exists()


def test_several_unknown_keys_are_each_named(org, builder, client_for):
    response = client_for(builder, org).post(
        "/api/v1/agents/", {"name": "A", "colour": "blue", "size": 3}, format="json"
    )
    assert response.status_code == 422
    assert set(response.json()) == {"colour", "size"}


def test_a_read_only_field_sent_back_is_refused_too(org, owner, client_for):
    # A client that round-trips the read model (its `id`, `created_at`) is told which keys a
    # write takes, instead of having them silently ignored.
    response = client_for(owner, org).post(
        "/api/v1/model-profiles/",
        {"id": 5, "label": "x", "provider": "offline", "model_name": "offline"},
        format="json",
    )
    assert response.status_code == 422, response.content
    assert set(response.json()) == {"id"}


@pytest.mark.parametrize("key", ["\ud800", "a\u0000b", "k" * 300])
def test_an_unknown_key_that_cannot_be_echoed_verbatim_is_still_a_422(
    org, builder, client_for, key
):
    import json

    body = json.dumps({"name": "A", key: 1}, ensure_ascii=True)
    response = client_for(builder, org).post(
        "/api/v1/agents/", body, content_type="application/json"
    )
    assert response.status_code == 422, response.content
    assert len(response.json()) == 1
