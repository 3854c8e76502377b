"""Every place the product dials a URL an organization chose refuses what the check refuses — when
the URL is saved and again when it is dialled — and a vault key reaches only an address that
passed. The list of places is docs/security.md ("Where the product dials")."""

from __future__ import annotations

import asyncio

import pytest

from apps.agents.models import Agent, ModelProfile
from apps.channels.platforms import MattermostClient, PlatformError
from apps.knowledge.embedders import EmbeddingFailed, OpenAICompatibleEmbedder
from apps.mcp.client import McpUnreachable, ServerAccess, list_tools
from apps.vault.services import secret_create
from tests.capabilities.web.runs import agent_with, run_now, slash_call, stored_returns
from tests.runs.factories import compatible_profile, published_agent

from .conftest import GATEWAY_IP, closed_port

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("network")]

KEY = "sk-vault-secret-never-to-leave-1234"
UNREACHABLE = "The model provider could not be reached."
PROFILES = "/api/v1/model-profiles/"


def _profile_body(base_url: str, **extra) -> dict:
    return {
        "label": "Self-hosted",
        "provider": "openai_compatible",
        "model_name": "llama-3",
        "base_url": base_url,
        **extra,
    }


@pytest.fixture
def key(org, owner):
    return secret_create(
        actor=owner, organization=org, name="gateway", purpose="openai_compatible", value=KEY
    )


# --- model profiles: when saved -------------------------------------------------------------------


@pytest.mark.parametrize(
    "base_url",
    [
        "http://169.254.169.254/latest/meta-data/",
        "http://[fd00:ec2::254]",
        "http://10.0.0.1/",
        "http://metadata.google.internal/",
    ],
)
def test_a_model_profile_at_an_internal_address_is_a_422_naming_base_url(
    org, owner, client_for, base_url
):
    client = client_for(owner, org)
    answer = client.post(PROFILES, _profile_body(base_url), format="json")
    assert answer.status_code == 422, answer.content
    assert list(answer.json()) == ["base_url"]
    assert not ModelProfile.objects.filter(label="Self-hosted").exists()


def test_changing_a_profile_to_an_internal_address_is_refused_too(org, owner, client_for):
    client = client_for(owner, org)
    created = client.post(PROFILES, _profile_body("https://news.example/v1"), format="json")
    assert created.status_code == 201, created.content
    changed = client.patch(
        f"{PROFILES}{created.json()['id']}/",
        {"base_url": "http://169.254.169.254/latest/meta-data/"},
        format="json",
    )
    assert changed.status_code == 422 and "cloud metadata" in changed.json()["base_url"][0]
    assert ModelProfile.objects.get(pk=created.json()["id"]).base_url == "https://news.example/v1"


def test_an_allow_listed_self_hosted_model_is_accepted_and_refused_without_the_entry(
    org, owner, client_for, closed
):
    client = client_for(owner, org)
    closed.OUTBOUND_ALLOW = ["10.0.0.1"]
    assert (
        client.post(PROFILES, _profile_body("http://10.0.0.1/"), format="json").status_code == 201
    )
    closed.OUTBOUND_ALLOW = ["gpu.internal:8000"]
    listed = client.post(PROFILES, _profile_body("http://gpu.internal:8000/v1"), format="json")
    assert listed.status_code == 201
    closed.OUTBOUND_ALLOW = []
    for url in ("http://10.0.0.1/", "http://gpu.internal:8000/v1"):
        refused = client.post(PROFILES, _profile_body(url), format="json")
        assert refused.status_code == 422 and "OUTBOUND_ALLOW" in refused.json()["base_url"][0]


def test_a_malformed_base_url_is_a_422_not_a_500(org, owner, client_for):
    answer = client_for(owner, org).post(PROFILES, _profile_body("http://[x]/v1"), format="json")
    assert answer.status_code == 422 and "base_url" in answer.json()


# --- model profiles: when a run dials -------------------------------------------------------------


def _agent_on(org, base_url, secret=None) -> Agent:
    profile = compatible_profile(org, base_url=base_url, model_name="llama-3", secret=secret)
    return published_agent(org, model_profile_id=profile.pk)


def test_the_vault_key_never_reaches_an_address_that_did_not_pass(
    org, owner, member, client_for, key, listener, network, allow_local_model_requests
):
    """Saved while its name answered a public address; by the time a run dials it answers
    127.0.0.1, which is not listed: the listener receives nothing — no connection, no key."""
    network.answer("gateway.example", GATEWAY_IP, "127.0.0.1")
    created = client_for(owner, org).post(
        PROFILES,
        _profile_body(f"http://gateway.example:{listener.port}/v1", secret_id=key.pk),
        format="json",
    )
    assert created.status_code == 201, created.content
    agent = published_agent(org, model_profile_id=created.json()["id"])

    run = run_now(member, org, agent, "hello")

    assert run.status == "failed" and run.error == UNREACHABLE
    assert listener.connections == 0 and listener.received == b""
    assert network.connected == []


def test_a_profile_whose_address_was_taken_off_the_list_sends_nothing(
    org, member, key, listener, closed, allow_local_model_requests
):
    agent = _agent_on(org, f"http://127.0.0.1:{listener.port}/v1", secret=key)
    run = run_now(member, org, agent, "hello")
    assert run.status == "failed" and run.error == UNREACHABLE
    assert listener.connections == 0 and listener.received == b""


def test_a_run_does_not_tell_an_open_port_from_a_closed_one_or_a_refused_address(
    org, member, listener, closed, allow_local_model_requests
):
    """No port scanner: a refused address, a closed port and an open port that does not speak
    HTTP end the run with one sentence."""
    errors = set()
    for base_url in (
        f"http://127.0.0.1:{listener.port}/v1",  # open, but not listed
        f"http://127.0.0.1:{closed_port()}/v1",  # closed, not listed
        "http://10.255.255.1:8000/v1",  # nothing answers there (filtered), not listed
    ):
        errors.add(run_now(member, org, _agent_on(org, base_url), "hello").error)
    closed.OUTBOUND_ALLOW = ["127.0.0.1"]
    for base_url in (
        f"http://127.0.0.1:{listener.port}/v1",  # listed, open, not HTTP
        f"http://127.0.0.1:{closed_port()}/v1",  # listed, closed
    ):
        errors.add(run_now(member, org, _agent_on(org, base_url), "hello").error)
    assert errors == {UNREACHABLE}


# --- embedding endpoints ------------------------------------------------------------------------


def test_an_embedding_endpoint_is_checked_when_it_is_dialled(listener, closed):
    embedder = OpenAICompatibleEmbedder(
        base_url=f"http://127.0.0.1:{listener.port}/v1",
        model_name="text-embedding-3-small",
        api_key=KEY,
        dimensions=8,
    )
    with pytest.raises(EmbeddingFailed) as failed:
        embedder.embed(["what the collection holds"])
    assert str(failed.value) == "The embedding endpoint could not be reached."
    assert listener.connections == 0


# --- MCP ------------------------------------------------------------------------------------------


def test_an_mcp_server_is_checked_when_it_is_dialled(listener, closed):
    access = ServerAccess(
        connection_id=1,
        name="Warehouse",
        url=f"http://127.0.0.1:{listener.port}/mcp",
        transport="streamable_http",
        token=KEY,
    )
    with pytest.raises(McpUnreachable) as unreachable:
        list_tools(access)
    assert "OUTBOUND_ALLOW" in unreachable.value.reason and KEY not in unreachable.value.sentence
    assert listener.connections == 0


def test_an_mcp_server_that_does_not_answer_says_so_without_the_network_detail(listener, closed):
    closed.OUTBOUND_ALLOW = ["127.0.0.1"]
    reasons = set()
    for port in (listener.port, closed_port()):
        access = ServerAccess(
            connection_id=1,
            name="Warehouse",
            url=f"http://127.0.0.1:{port}/mcp",
            transport="streamable_http",
        )
        with pytest.raises(McpUnreachable) as unreachable:
            list_tools(access)
        reasons.add(unreachable.value.reason)
    assert reasons == {"the server could not be reached"}


# --- Mattermost -----------------------------------------------------------------------------------


def test_a_mattermost_server_is_checked_when_saved_and_when_dialled(listener, closed):
    with pytest.raises(PlatformError) as refused:
        MattermostClient(KEY, f"http://127.0.0.1:{listener.port}")
    assert "OUTBOUND_ALLOW" in refused.value.sentence

    closed.OUTBOUND_ALLOW = ["127.0.0.1"]
    bot = MattermostClient(KEY, f"http://127.0.0.1:{listener.port}")
    closed.OUTBOUND_ALLOW = []  # the operator took it off the list after the binding was made
    with pytest.raises(PlatformError) as unreachable:
        bot.check()
    assert unreachable.value.sentence == "mattermost could not be reached"
    assert listener.connections == 0


# --- mem0 -----------------------------------------------------------------------------------------


def test_a_mem0_server_is_checked_when_it_is_dialled(listener, closed):
    from apps.capabilities.tools.mem0 import Mem0Client, Mem0Error

    mem0 = Mem0Client(f"https://127.0.0.1:{listener.port}", KEY)
    with pytest.raises(Mem0Error) as failed:
        asyncio.run(mem0.add("1:2:user-3", "a fact"))
    assert failed.value.sentence == "mem0 could not be reached"
    with pytest.raises(Mem0Error):
        mem0.delete_user("1:2:user-3")
    assert listener.connections == 0


@pytest.mark.parametrize(
    "base_url, says",
    [
        ("https://[x]/", "not a valid"),
        ("https://169.254.169.254/", "cloud metadata"),
        ("https://internal.example/", "OUTBOUND_ALLOW"),
    ],
)
def test_publishing_a_mem0_base_url_it_may_not_dial_is_a_422_naming_the_field(
    org, builder, client_for, key, closed, base_url, says
):
    closed.MEM0_ALLOWED_HOSTS = ["169.254.169.254", "internal.example", "[x]", "x"]
    agent = published_agent(org, created_by=builder)
    client = client_for(builder, org)
    binding = {"id": "memory_mem0", "secret_id": key.pk, "config": {"base_url": base_url}}
    patched = client.patch(
        f"/api/v1/agents/{agent.pk}/", {"spec": {"capabilities": [binding]}}, format="json"
    )
    assert patched.status_code in (200, 422), patched.content
    if patched.status_code == 422:
        # The typed spec refuses a URL that is not one when the draft is saved (its schema says
        # `format: uri`), naming the field; nothing was saved, so there is nothing to publish.
        assert "base_url" in patched.content.decode(), patched.content
        assert says == "not a valid", patched.content
        return
    answer = client.post(f"/api/v1/agents/{agent.pk}/publish/", {}, format="json")
    assert answer.status_code == 422, answer.content
    fields = {(e["binding"], e["field"]) for e in answer.json()["errors"]}
    assert ("memory_mem0", "config.base_url") in fields
    assert any(says in e["message"] for e in answer.json()["errors"]), answer.json()


# --- web_fetch ------------------------------------------------------------------------------------


def test_a_malformed_url_is_a_tool_error_the_model_sees_and_the_run_goes_on(org, member):
    agent = agent_with(org, {"id": "web_fetch", "config": {}})
    run = run_now(member, org, agent, slash_call("web_fetch", url="http://[x]/"))
    assert run.status == "completed", run.error
    (part,) = stored_returns(run)
    assert part.outcome == "retried"
    assert "is not an absolute http(s) URL" in part.content


def test_web_fetch_never_reaches_an_allow_listed_internal_host(org, member, closed):
    closed.OUTBOUND_ALLOW = ["gpu.internal"]
    agent = agent_with(org, {"id": "web_fetch", "config": {}})
    run = run_now(member, org, agent, slash_call("web_fetch", url="http://gpu.internal/"))
    (part,) = stored_returns(run)
    assert part.outcome == "retried" and "never reads" in part.content


# --- what a run's provider is built with ---------------------------------------------------------


@pytest.mark.parametrize("provider", ["openai_compatible", "openai", "anthropic"])
def test_the_provider_built_for_a_run_sends_through_the_pinned_transport(org, key, provider):
    import asyncio as _asyncio

    from apps.outbound.clients import AsyncPinnedTransport
    from apps.runs.modelbuilder import build_model

    profile = ModelProfile.objects.create(
        organization=org,
        label=provider,
        provider=provider,
        model_name="some-model",
        base_url="https://news.example/v1" if provider == "openai_compatible" else "",
        secret=key,
    )
    handle = build_model(profile)
    assert isinstance(handle.own_client._client._transport, AsyncPinnedTransport)
    _asyncio.run(handle.aclose())


def test_the_outbound_package_imports_no_product_app():
    """The ground floor (STYLE.md): every app that dials imports it, never the reverse."""
    import ast
    from pathlib import Path

    import apps.outbound

    root = Path(apps.outbound.__file__).parent
    imported = {
        node.module
        for path in root.rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ImportFrom) and node.module
    } | {
        alias.name
        for path in root.rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Import)
        for alias in node.names
    }
    assert not {name for name in imported if name.startswith("apps.")}


def test_the_console_form_shows_the_refusal_on_base_url(client, org, owner):
    client.force_login(owner)
    page = client.post(
        "/settings/model-profiles/",
        {
            "label": "Metadata",
            "provider": "openai_compatible",
            "model_name": "llama",
            "base_url": "http://169.254.169.254/latest/meta-data/",
        },
    ).content.decode()
    near_field = page.split('id="id_base_url"', 1)[1][:600]
    assert (
        "cloud metadata" in page
        and 'aria-invalid="true"' in page.split('id="id_base_url"')[0][-300:] + near_field
    )
    assert not ModelProfile.objects.filter(organization=org, label="Metadata").exists()
