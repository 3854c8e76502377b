"""The API refuses what the typed spec schema refuses (apps/agents/api/spec_schema.py), with a
422 naming `spec` and the place in it, and writes nothing; what the schema takes, it takes."""

from __future__ import annotations

import pytest

from apps.agents.models import Agent
from tests.runs.factories import published_agent


@pytest.mark.parametrize(
    "spec, where",
    [
        # pydantic's lax mode alone would store 0 / 5: the schema says integer.
        ({"alerts": {"usage": {"audience": [], "chosen_user_ids": [False]}}}, "chosen_user_ids[0]"),
        ({"limits": {"max_steps": "5"}}, "limits.max_steps"),
        ({"limits": {"max_steps": 501}}, "limits.max_steps"),
        ({"colour": "blue"}, "colour"),
        ({"capabilities": [{"id": "nope"}]}, "capabilities[0].id"),
        ({"capabilities": [{"id": "channel_tools"}]}, "capabilities[0].id"),
        ({"capabilities": [{"id": "clock", "config": {"zone": "x"}}]}, "capabilities[0].config"),
        (
            {"capabilities": [{"id": "web_research", "config": {"max_results": True}}]},
            "capabilities[0].config.max_results",
        ),
        (
            {"capabilities": [{"id": "clock", "config": {"timezone": "Mars/Base"}}]},
            "capabilities[0].config.timezone",
        ),
    ],
)
def test_a_spec_outside_its_schema_is_a_422_naming_where(org, builder, client_for, spec, where):
    client = client_for(builder, org)
    response = client.post("/api/v1/agents/", {"name": "A", "spec": spec}, format="json")
    assert response.status_code == 422, response.content
    assert any(where in message for message in response.json()["spec"]), response.json()
    assert not Agent.objects.filter(name="A").exists()
    agent = published_agent(org, created_by=builder)
    response = client.patch(f"/api/v1/agents/{agent.pk}/", {"spec": spec}, format="json")
    assert response.status_code == 422, response.content
    agent.refresh_from_db()
    assert agent.draft_spec == {"instructions": "You are a helpful test agent."}


def test_a_spec_the_schema_takes_is_stored(org, builder, client_for):
    spec = {
        "instructions": "Be brief.",
        "budget": {"monthly_usd": "12.50"},
        "capabilities": [
            {"id": "clock", "config": {"timezone": "Europe/Madrid"}},
            {"id": "planning", "tool_approval": {"write_plan": "required"}},
        ],
    }
    response = client_for(builder, org).post(
        "/api/v1/agents/", {"name": "A", "spec": spec}, format="json"
    )
    assert response.status_code == 201, response.content
    stored = response.json()["spec"]
    assert [b["id"] for b in stored["capabilities"]] == ["clock", "planning"]
    assert stored["capabilities"][0]["config"] == {"timezone": "Europe/Madrid"}
