"""Hardening found missing by a prober (issue 13, defect 6): the Content-Security-Policy, the
transport settings of the production path, limits on pagination and bodies, permission before
validation, strict path ids, the Bearer scheme in any case, API keys that expire."""

from __future__ import annotations

import datetime as dt

import pytest
from asgiref.sync import async_to_sync
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator
from django.core import checks
from django.test import override_settings
from django.utils import timezone

from agenticos.asgi import application
from apps.orgs.models import ApiKey
from apps.orgs.services import api_key_create
from tests.runs.factories import published_agent, queued_run
from tests.runs.live import asgi_server  # noqa: F401  (fixture)

# --- Content-Security-Policy -------------------------------------------------------------


def test_every_console_page_carries_a_policy_that_runs_own_scripts_only(client, org, owner):
    client.force_login(owner)
    policy = client.get("/activity/")["Content-Security-Policy"]
    directives = dict(part.strip().split(" ", 1) for part in policy.split(";"))
    assert directives["script-src"] == "'self'"
    assert directives["style-src"] == "'self'"
    assert directives["frame-ancestors"] == "'none'"
    assert "'unsafe-inline'" not in policy and "'unsafe-eval'" not in policy


def test_the_api_answers_carry_the_policy_too(org, owner, client_for):
    assert "Content-Security-Policy" in client_for(owner, org).get("/api/v1/orgs/")


@pytest.mark.parametrize("path", ["/login/", "/api/v1/docs/"])
def test_pages_have_no_inline_script(client, db, path):
    body = client.get(path).content.decode()
    assert "<script>" not in body
    assert " onchange=" not in body and " onclick=" not in body


def test_the_console_layout_and_builder_have_no_inline_script(client, org, owner, builder):
    from apps.agents.services import agent_create

    agent = agent_create(actor=builder, organization=org, name="A", spec=None)
    client.force_login(owner)
    for path in ("/activity/", f"/agents/{agent.pk}/"):
        body = client.get(path, follow=True).content.decode()
        assert "<script>" not in body, path
        assert " onchange=" not in body, path


def test_the_docs_script_is_served_as_a_file(client, db):
    response = client.get("/api/v1/docs/?script=")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/javascript")


@override_settings(CSP_REPORT_ONLY=True)
def test_report_only_lets_an_operator_try_a_change(client, db):
    response = client.get("/login/")
    assert "Content-Security-Policy-Report-Only" in response
    assert "Content-Security-Policy" not in response


# --- transport: the docker production path ------------------------------------------------


@override_settings(
    DEBUG=False,
    SECRET_KEY="x" * 64 + "-a-long-random-production-secret-key-value",
    ALLOWED_HOSTS=["agenticos.example.com"],
    SESSION_COOKIE_SECURE=True,
    CSRF_COOKIE_SECURE=True,
    SECURE_SSL_REDIRECT=True,
    SECURE_HSTS_SECONDS=31536000,
    SECURE_HSTS_INCLUDE_SUBDOMAINS=True,
    SECURE_HSTS_PRELOAD=True,
)
def test_the_production_settings_pass_the_deploy_checks():
    problems = checks.run_checks(tags=[checks.Tags.security], include_deployment_checks=True)
    assert problems == []


def test_the_compose_file_turns_the_transport_settings_on():
    from pathlib import Path

    import yaml

    compose = yaml.safe_load(Path("docker/compose.yml").read_text())
    env = compose["x-agenticos-env"]
    assert env["SESSION_COOKIE_SECURE"] == "${SESSION_COOKIE_SECURE:-true}"
    assert env["SECURE_SSL_REDIRECT"] == "${SECURE_SSL_REDIRECT:-true}"
    assert env["SECURE_HSTS_SECONDS"] == "${SECURE_HSTS_SECONDS:-31536000}"


@override_settings(SECURE_HSTS_SECONDS=3600, SECURE_SSL_REDIRECT=True)
def test_hsts_is_sent_over_https_and_http_is_redirected(client, db):
    assert client.get("/login/", secure=True)["Strict-Transport-Security"] == "max-age=3600"
    plain = client.get("/login/")
    assert plain.status_code == 301 and plain.url.startswith("https://")
    # The container's health probe stays on plain http.
    assert client.get("/healthz").status_code != 301


# --- pagination -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "query",
    [
        "limit=501",
        "limit=0",
        "limit=abc",
        "limit=²",
        "limit=",
        "offset=-1",
        "offset=",
        "offset=99999999999999999999",
    ],
)
def test_a_limit_or_offset_outside_its_type_is_a_422_naming_it(org, owner, client_for, query):
    response = client_for(owner, org).get(f"/api/v1/memberships/?{query}")
    assert response.status_code == 422
    assert query.split("=")[0] in response.json()


def test_the_limit_ceiling_is_accepted(org, owner, client_for):
    assert client_for(owner, org).get("/api/v1/memberships/?limit=500").status_code == 200


# --- bodies -----------------------------------------------------------------------------


@override_settings(DATA_UPLOAD_MAX_MEMORY_SIZE=2048)
def test_a_json_body_over_the_limit_is_a_413_in_json(org, builder, client_for):
    body = {"name": "Big", "description": "x" * 4000}
    response = client_for(builder, org).post("/api/v1/agents/", body, format="json")
    assert response.status_code == 413
    assert "detail" in response.json()


def test_a_form_body_is_a_415_the_api_speaks_json(org, builder, client_for):
    response = client_for(builder, org).post("/api/v1/agents/", {"name": "x"}, format="multipart")
    assert response.status_code == 415
    assert "detail" in response.json()


@pytest.mark.parametrize(
    "body, field",
    [
        ({"name": 0}, "name"),
        ({"name": "A", "description": 5}, "description"),
        ({"name": "A", "spec": "not an object"}, "spec"),
    ],
)
def test_a_json_value_of_another_type_is_a_422_not_coerced(org, builder, client_for, body, field):
    """Found by `make fuzz`: DRF read 0 as "0"; the schema says a string, so 0 is refused."""
    response = client_for(builder, org).post("/api/v1/agents/", body, format="json")
    assert response.status_code == 422
    assert field in response.json()


def test_a_null_list_is_a_422_not_a_500(org, owner, client_for):
    """Found by `make fuzz` (a null where a list belongs reached the type check's loop)."""
    from apps.agents.services import agent_create

    agent = agent_create(actor=owner, organization=org, name="A", spec=None)
    response = client_for(owner, org).post(
        f"/api/v1/agents/{agent.pk}/grants/", {"user_id": owner.pk, "actions": None}, format="json"
    )
    assert response.status_code == 422 and "actions" in response.json()


def test_a_run_whose_agent_id_is_a_string_is_a_422(org, member, client_for):
    response = client_for(member, org).post(
        "/api/v1/runs/", {"agent_id": "1", "input": "hi"}, format="json"
    )
    assert response.status_code == 422 and "agent_id" in response.json()


def test_without_permission_a_bad_body_is_a_403_not_a_422(org, viewer, member, client_for):
    created = client_for(viewer, org).post("/api/v1/agents/", {"name": ""}, format="json")
    assert created.status_code == 403
    changed = client_for(member, org).patch(
        f"/api/v1/orgs/{org.pk}/", {"monthly_budget_usd": "lots"}, format="json"
    )
    assert changed.status_code == 403


# --- ids in paths -----------------------------------------------------------------------


@pytest.mark.parametrize("suffix", ["%20", "%09", "+", ".0"])
def test_a_path_id_with_anything_around_it_is_a_404(org, owner, client_for, suffix):
    client = client_for(owner, org)
    assert client.get(f"/api/v1/orgs/{org.pk}/").status_code == 200
    assert client.get(f"/api/v1/orgs/{org.pk}{suffix}/").status_code == 404


# --- Bearer in any case, over websockets too ------------------------------------------------


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("scheme", ["bearer", "BEARER"])
def test_a_websocket_accepts_the_bearer_scheme_in_any_case(org, member, scheme):
    agent = published_agent(org)
    run = queued_run(member, org, agent)

    async def scenario():
        key = await database_sync_to_async(
            lambda: api_key_create(actor=None, organization=org, user=member, name="ws")[1]
        )()
        communicator = WebsocketCommunicator(
            application,
            f"/ws/runs/{run.pk}/",
            headers=[(b"authorization", f"{scheme} {key}".encode())],
        )
        connected, _ = await communicator.connect()
        await communicator.disconnect()
        return connected

    assert async_to_sync(scenario)() is True


# --- API keys that expire -----------------------------------------------------------------


def test_a_key_with_an_expiry_works_until_then(org, member, client_for, api_client):
    expires = timezone.now() + dt.timedelta(days=7)
    response = client_for(member, org).post(
        "/api/v1/api-keys/", {"name": "ci", "expires_at": expires.isoformat()}, format="json"
    )
    assert response.status_code == 201, response.content
    assert response.json()["expires_at"] is not None
    api_client.credentials(HTTP_AUTHORIZATION=f"Bearer {response.json()['key']}")
    assert api_client.get("/api/v1/orgs/").status_code == 200


def test_an_expired_key_is_refused_like_a_revoked_one(org, member, api_client):
    api_key, raw_key = api_key_create(
        actor=None,
        organization=org,
        user=member,
        name="k",
        expires_at=timezone.now() + dt.timedelta(minutes=5),
    )
    ApiKey.objects.filter(pk=api_key.pk).update(expires_at=timezone.now() - dt.timedelta(seconds=1))
    api_client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw_key}")
    response = api_client.get("/api/v1/orgs/")
    assert response.status_code == 401
    assert response.json()["detail"] == "Invalid API key."


@pytest.mark.parametrize("when", ["2001-01-01T00:00:00Z", "9999-12-31T23:59:59Z", "soon"])
def test_an_expiry_in_the_past_or_out_of_range_is_a_422(org, member, client_for, when):
    response = client_for(member, org).post(
        "/api/v1/api-keys/", {"name": "ci", "expires_at": when}, format="json"
    )
    assert response.status_code == 422
    assert "expires_at" in response.json()


def test_a_key_without_expiry_never_expires(org, member, client_for):
    response = client_for(member, org).post("/api/v1/api-keys/", {"name": "ci"}, format="json")
    assert response.json()["expires_at"] is None and response.json()["active"] is True


# --- websocket close codes, as a real client receives them -------------------------------


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    "path, key_of, code",
    [
        ("/ws/runs/999999/", "member", 4404),
        # Past bigint: not found (Django answers an exact lookup out of the column's range
        # with no rows, without asking PostgreSQL).
        ("/ws/runs/99999999999999999999/", "member", 4404),
        ("/ws/conversations/99999999999999999999/", "member", 4404),
        ("/ws/runs/{run}/?after=²", "member", 4422),
        ("/ws/runs/{run}/", "bad", 4401),
    ],
)
def test_a_real_client_receives_the_close_code_the_docs_promise(
    asgi_server,  # noqa: F811
    org,
    member,
    path,
    key_of,
    code,  # noqa: F811
):
    """A close before the accept reached a real client as an HTTP 403 with no code at all."""
    from websockets.exceptions import ConnectionClosed
    from websockets.sync.client import connect

    run = queued_run(member, org, published_agent(org))
    key = (
        api_key_create(actor=None, organization=org, user=member, name="ws")[1]
        if key_of == "member"
        else "aos_not-a-key"
    )
    url = f"ws://{asgi_server}{path.format(run=run.pk)}"
    with connect(url, additional_headers={"Authorization": f"Bearer {key}"}, open_timeout=10) as ws:
        with pytest.raises(ConnectionClosed):
            ws.recv(timeout=10)
        assert ws.close_code == code


@pytest.mark.parametrize("raw", [2**63, "9" * 30, -1, 0, "①", None])
def test_selectors_given_an_id_past_bigint_find_nothing_instead_of_failing(org, owner, raw):
    """A path id the database cannot hold is "not found" (the caller's 404). Django 5 already
    answers such a lookup with no rows; ``agenticos.params.as_id`` says so in one place instead of
    four try/int() blocks, and refuses what is no id (a sign, a superscript digit) the same way."""
    from apps.agents.selectors import agent_for
    from apps.knowledge.selectors import collection_for
    from apps.memory.selectors import context_file_for
    from apps.orgs.selectors import organization_for_user

    assert agent_for(owner, org, raw) is None
    assert collection_for(owner, org, raw) is None
    assert context_file_for(org, raw) is None
    assert organization_for_user(owner, raw) is None
