"""Bad input is a 422 naming the field (a path id outside its type is a 404), never a 500.

Found by a prober (issue 13, defect 3): values that pass ``str.isdigit()`` but break ``int()``
(``²``), NUL bytes and lone surrogates PostgreSQL cannot store, dates whose "whole day" overflows
Python's datetime, numbers beyond bigint, a path id that is not a number, JSON nested a thousand
deep. One parsing layer (``agenticos/params.py``, on DRF's fields) answers all of them.
"""

from __future__ import annotations

import json

import pytest
from asgiref.sync import async_to_sync
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator

from agenticos.asgi import application
from apps.orgs.services import api_key_create
from tests.runs.factories import published_agent, queued_run
from tests.runs.test_consumer import handshake

BEYOND_BIGINT = "99999999999999999999"


@pytest.fixture
def owner_client(org, owner, client_for):
    return client_for(owner, org)


@pytest.mark.parametrize(
    "url, field",
    [
        ("/api/v1/runs/?user_id=²", "user_id"),
        ("/api/v1/runs/?user_id=①", "user_id"),
        ("/api/v1/runs/?agent_id=²", "agent_id"),
        ("/api/v1/runs/?user_id=" + BEYOND_BIGINT, "user_id"),
        ("/api/v1/runs/?took_over_ms=" + BEYOND_BIGINT, "took_over_ms"),
        ("/api/v1/runs/?took_over_ms=²", "took_over_ms"),
        # Found by `make fuzz`: within bigint, but past what a timedelta holds.
        ("/api/v1/runs/?took_over_ms=9223372036854775807", "took_over_ms"),
        ("/api/v1/runs/?started_to=9999-12-31", "started_to"),
        ("/api/v1/runs/?started_from=0001-01-01", "started_from"),
        ("/api/v1/runs/?started_from=9999-12-31T23:59:59-12:00", "started_from"),
        ("/api/v1/runs/?model_label=a%00b", "model_label"),
        ("/api/v1/runs/?period=²d", "period"),
        ("/api/v1/runs/?period=3%000d", "period"),
        ("/api/v1/runs/?period=" + BEYOND_BIGINT + "d", "period"),
        ("/api/v1/runs/export/?started_from=2025-01-01&started_to=9999-12-31", "started_to"),
        ("/api/v1/approvals/?triggered_by_user_id=²", "triggered_by_user_id"),
        ("/api/v1/approvals/?created_to=9999-12-31", "created_to"),
        ("/api/v1/approvals/?created_from=0001-01-01", "created_from"),
        ("/api/v1/audit/?actor_user_id=²", "actor_user_id"),
        ("/api/v1/audit/?created_to=9999-12-31", "created_to"),
        ("/api/v1/audit/?created_from=0001-01-01", "created_from"),
        ("/api/v1/audit/?action=a%00b", "action"),
        ("/api/v1/spend/?days=²", "days"),
        ("/api/v1/spend/?days=" + BEYOND_BIGINT, "days"),
        ("/api/v1/spend/?from=9999-12-31", "from"),
        ("/api/v1/stats/usage/?group_by=nonsense", "group_by"),
        ("/api/v1/stats/usage/?to=9999-12-31&from=2025-01-01", "to"),
    ],
)
def test_a_query_value_outside_its_type_is_a_422_naming_it(owner_client, url, field):
    response = owner_client.get(url)
    assert response.status_code == 422, response.content
    assert field in response.json()


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/runs/²/",
        "/api/v1/runs/①/transcript/",
        f"/api/v1/runs/{BEYOND_BIGINT}/",
        "/api/v1/agents/²/",
        f"/api/v1/agents/{BEYOND_BIGINT}/",
        "/api/v1/orgs/abc/",
        "/api/v1/orgs/²/",
        "/api/v1/memberships/²/",
        "/api/v1/api-keys/²/",
        "/api/v1/secrets/²/",
        "/api/v1/model-profiles/²/",
        "/api/v1/context/²/",
        "/api/v1/audit/²/",
        f"/api/v1/audit/{BEYOND_BIGINT}/",
    ],
)
def test_a_path_id_outside_its_type_is_a_404(owner_client, path):
    response = owner_client.get(path)
    assert response.status_code == 404
    # In JSON like every API error, even where no route matched.
    assert response["Content-Type"] == "application/json"
    assert "detail" in response.json()


def test_patch_of_an_org_whose_id_is_not_a_number_is_a_404(owner_client):
    response = owner_client.patch("/api/v1/orgs/abc/", {"name": "x"}, format="json")
    assert response.status_code == 404


@pytest.mark.parametrize(
    "spec, why",
    [
        ({"instructions": "hi\u0000there", "capabilities": []}, "NUL"),
        ({"instructions": "fine", "capabilities": [], "k\u0000": 1}, "NUL"),
    ],
)
def test_a_spec_postgres_cannot_store_is_a_422_naming_spec(org, builder, client_for, spec, why):
    response = client_for(builder, org).post(
        "/api/v1/agents/", {"name": "Bad", "spec": spec}, format="json"
    )
    assert response.status_code == 422, response.content
    assert why in " ".join(response.json()["spec"])


def test_a_lone_surrogate_in_a_spec_is_a_422_naming_spec(org, builder, client_for):
    # Written by hand: a lone surrogate cannot be encoded by Python's own JSON writer as UTF-8.
    body = '{"name": "Bad", "spec": {"instructions": "\\ud800", "capabilities": []}}'
    response = client_for(builder, org).post(
        "/api/v1/agents/", body, content_type="application/json"
    )
    assert response.status_code == 422, response.content
    assert "surrogate" in " ".join(response.json()["spec"])


def test_a_nul_in_a_text_field_is_a_422_naming_it(org, builder, client_for):
    response = client_for(builder, org).post("/api/v1/agents/", {"name": "a\u0000b"}, format="json")
    assert response.status_code == 422
    assert "name" in response.json()


def test_json_nested_a_thousand_deep_is_a_422(org, builder, client_for):
    body = '{"name": "Deep", "spec": ' + "[" * 1000 + "]" * 1000 + "}"
    response = client_for(builder, org).post(
        "/api/v1/agents/", body, content_type="application/json"
    )
    assert response.status_code == 422, response.content
    assert "body" in response.json()


def test_json_nested_a_hundred_thousand_deep_is_a_422(org, builder, client_for):
    body = "[" * 100_000 + "]" * 100_000
    response = client_for(builder, org).post(
        "/api/v1/agents/", body, content_type="application/json"
    )
    assert response.status_code == 422


def test_a_spec_nested_past_the_field_limit_is_a_422_naming_spec(org, builder, client_for):
    spec = {"instructions": "x", "capabilities": [], "deep": json.loads("[" * 40 + "]" * 40)}
    response = client_for(builder, org).post(
        "/api/v1/agents/", {"name": "Deep", "spec": spec}, format="json"
    )
    assert response.status_code == 422
    assert "spec" in response.json()


@pytest.mark.parametrize(
    "body, field",
    [
        ({"agent_id": int(BEYOND_BIGINT), "input": "hi"}, "agent_id"),
        ({"agent_id": "²", "input": "hi"}, "agent_id"),
        ({"agent_id": 1, "input": "hi\u0000"}, "input"),
        ({"agent_id": 1, "input": "hi", "conversation_id": int(BEYOND_BIGINT)}, "conversation_id"),
    ],
)
def test_a_run_body_outside_its_types_is_a_422_naming_the_field(
    org, member, client_for, body, field
):
    response = client_for(member, org).post("/api/v1/runs/", body, format="json")
    assert response.status_code == 422, response.content
    assert field in response.json()


def test_a_grant_naming_a_user_beyond_bigint_is_a_422(org, builder, client_for):
    from apps.agents.services import agent_create

    agent = agent_create(actor=builder, organization=org, name="A", spec=None)
    response = client_for(builder, org).post(
        f"/api/v1/agents/{agent.pk}/grants/",
        {"user_id": int(BEYOND_BIGINT), "actions": ["run"]},
        format="json",
    )
    assert response.status_code == 422
    assert "user_id" in response.json()


@pytest.mark.parametrize("value", ["²", "5 ", " 5", BEYOND_BIGINT])
def test_an_organization_header_outside_its_type_is_a_422(org, owner, api_client, value):
    api_client.force_login(owner)
    response = api_client.get("/api/v1/orgs/", HTTP_X_ORGANIZATION_ID=value)
    assert response.status_code == 422
    assert "X-Organization-Id" in response.json()


@pytest.mark.parametrize(
    "url",
    [
        "/activity/?user_id=²",
        "/activity/?started_to=9999-12-31",
        "/activity/?model_label=a%00b",
        "/activity/?period=%00",
    ],
)
def test_the_console_activity_filters_answer_a_form_error_not_a_500(client, org, owner, url):
    client.force_login(owner)
    response = client.get(url)
    assert response.status_code == 200


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("cursor", ["²", "①", BEYOND_BIGINT + "0"])
def test_a_websocket_cursor_outside_its_type_closes_4422(org, member, cursor):
    agent = published_agent(org)
    run = queued_run(member, org, agent)

    async def scenario():
        key = await database_sync_to_async(
            lambda: api_key_create(actor=None, organization=org, user=member, name="ws")[1]
        )()
        communicator = WebsocketCommunicator(
            application,
            f"/ws/runs/{run.pk}/?after={cursor}",
            headers=[(b"authorization", f"Bearer {key}".encode())],
        )
        return await handshake(communicator)

    assert async_to_sync(scenario)() == (False, 4422)


def test_a_second_secret_of_the_same_name_is_a_422_naming_it(org, owner, client_for):
    """Found by `make fuzz`: the unique constraint surfaced as an IntegrityError, a 500."""
    client = client_for(owner, org)
    body = {"name": "openai", "purpose": "other", "value": "sk-0123456789"}
    assert client.post("/api/v1/secrets/", body, format="json").status_code == 201
    again = client.post("/api/v1/secrets/", body, format="json")
    assert again.status_code == 422
    assert "name" in again.json()


@pytest.mark.parametrize("secret", ["²", "5 ", BEYOND_BIGINT])
def test_the_builder_form_reads_a_bad_secret_id_as_none_not_a_500(client, org, builder, secret):
    from apps.agents.services import agent_create

    agent = agent_create(actor=builder, organization=org, name="A", spec=None)
    client.force_login(builder)
    data = {
        "name": "A",
        "instructions": "Help.",
        "max_steps": "25",
        "budget_monthly_usd": "",
        "cap.web_research.enabled": "on",
        "cap.web_research.secret_id": secret,
        "action": "save",
    }
    response = client.post(f"/agents/{agent.pk}/", data)
    assert response.status_code == 302
    agent.refresh_from_db()
    assert all(b.secret_id is None for b in agent.draft.capabilities)


# --- Text fields refuse a non-string (schemathesis ST201: DRF's CharField reads 3 as "3") -----

TRIGGER = {
    "kind": "schedule",
    "name": "Morning",
    "prompt": "Summarise yesterday",
    "schedule": {"every_seconds": 3600},
}


@pytest.mark.parametrize(
    "change, field",
    [
        ({"name": 3}, "name"),
        ({"prompt": 3}, "prompt"),
        ({"prompt": ["a list"]}, "prompt"),
        ({"kind": 1}, "kind"),
        ({"name": None}, "name"),
        ({"run_as_creator": "yes"}, "run_as_creator"),
        ({"schedule": {"cron": 5}}, "schedule"),
        ({"schedule": {"cron": "0 9 * * *", "timezone": 1}}, "schedule"),
        ({"schedule": {"every_seconds": "3600"}}, "schedule"),
        ({"schedule": {"cron": "0 9 * * *", "timezone": "Europe/Madrid\u0000"}}, "schedule"),
        ({"schedule": "every hour"}, "schedule"),
    ],
)
def test_a_trigger_body_outside_its_types_is_a_422_naming_the_field(
    org, builder, client_for, change, field
):
    from apps.triggers.models import Trigger

    agent = published_agent(org, created_by=builder)
    body = {**TRIGGER, "agent_id": agent.pk, **change}
    response = client_for(builder, org).post("/api/v1/triggers/", body, format="json")
    assert response.status_code == 422, response.content
    assert field in response.json()
    assert not Trigger.objects.exists()


@pytest.fixture
def answer(org, member):
    from apps.runs.models import Message
    from apps.runs.runner import execute_run

    run = queued_run(member, org, published_agent(org), "hello")
    execute_run(run.pk)
    return Message.objects.get(run_id=run.pk, role="assistant")


@pytest.mark.parametrize(
    "body, field",
    [
        ({"thumb": "down", "comment": 3}, "comment"),
        ({"thumb": "down", "comment": ["wrong"]}, "comment"),
        ({"thumb": "down", "comment": {"text": "wrong"}}, "comment"),
        ({"thumb": 1}, "thumb"),
        ({"thumb": True}, "thumb"),
        ({"thumb": "down", "comment": "a\u0000b"}, "comment"),
    ],
)
def test_a_rating_body_outside_its_types_is_a_422_naming_the_field(
    org, member, client_for, answer, body, field
):
    from apps.ratings.models import MessageRating

    response = client_for(member, org).put(
        f"/api/v1/messages/{answer.pk}/rating/", body, format="json"
    )
    assert response.status_code == 422, response.content
    assert field in response.json()
    assert not MessageRating.objects.exists()


@pytest.mark.parametrize(
    "body, field",
    [
        ({"name": 3, "url": "https://tools.example.test/mcp"}, "name"),
        ({"name": "Tools", "url": 3}, "url"),
        ({"name": "Tools", "url": "https://tools.example.test/mcp", "prefix": 7}, "prefix"),
        ({"name": "Tools", "url": "https://tools.example.test/mcp", "token": 12345}, "token"),
        ({"name": "Tools", "url": "https://tools.example.test/mcp", "transport": 1}, "transport"),
        ({"name": "Tools", "url": "https://tools.example.test/mcp", "scope": 0}, "scope"),
    ],
)
def test_an_mcp_connection_body_outside_its_types_is_a_422_naming_the_field(
    org, owner, client_for, body, field
):
    from apps.mcp.models import McpConnection

    response = client_for(owner, org).post("/api/v1/mcp/connections/", body, format="json")
    assert response.status_code == 422, response.content
    assert field in response.json()
    assert not McpConnection.objects.exists()


@pytest.mark.parametrize(
    "body, field",
    [
        ({"name": 3}, "name"),
        ({"url": 3}, "url"),
        ({"prefix": 7}, "prefix"),
        ({"token": 12345}, "token"),
        ({"clear_token": "yes"}, "clear_token"),
    ],
)
def test_an_mcp_connection_change_outside_its_types_is_a_422_naming_the_field(
    org, owner, client_for, body, field
):
    from apps.mcp.models import McpConnection

    # Written directly: creating one over the API resolves its host, and this one has none.
    connection = McpConnection.objects.create(
        organization=org, name="Tools", prefix="tools", url="https://tools.example.test/mcp"
    )
    client = client_for(owner, org)
    response = client.patch(f"/api/v1/mcp/connections/{connection.pk}/", body, format="json")
    assert response.status_code == 422, response.content
    assert field in response.json()
    assert McpConnection.objects.get().name == "Tools"
