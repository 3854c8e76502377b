"""The real provider path: an OpenAI-compatible server on 127.0.0.1, through the HTTP client."""

import asyncio
import logging
from decimal import Decimal

import pytest
from pydantic_ai import Agent

from apps.agents.models import ModelProfile
from apps.runs.modelbuilder import build_model
from apps.runs.models import Message
from apps.runs.runner import execute_run
from apps.spend.models import LedgerEntry
from apps.spend.pricing import price_usage
from apps.vault.services import secret_create

from .conftest import wait_for
from .factories import compatible_profile, published_agent, queued_run
from .fake_openai import FakeOpenAI


@pytest.fixture
def server(allow_local_model_requests):
    with FakeOpenAI() as fake:
        yield fake


def agent_on(org, server, model_name, owner, **spec):
    secret = secret_create(
        actor=owner,
        organization=org,
        name=f"key-{model_name}",
        purpose="openai_compatible",
        value="sk-local-test-key-1234",
    )
    profile = compatible_profile(
        org, base_url=server.base_url, model_name=model_name, secret=secret
    )
    return published_agent(org, model_profile_id=profile.pk, **spec)


@pytest.mark.django_db(transaction=True)
def test_a_run_through_celery_streams_from_the_server_with_tool_calls_and_priced_usage(
    celery_worker, server, org, owner, member, client_for, echo_toolset
):
    agent = agent_on(org, server, "gpt-4o-mini", owner, capabilities=[{"id": echo_toolset}])

    response = client_for(member, org).post(
        "/api/v1/runs/", {"agent_id": agent.pk, "input": "use echo please"}, format="json"
    )
    run = wait_for(response.json()["id"])

    assert run.status == "completed", run.error
    assert run.output == "The echo said echo: hi."
    assert run.model_provider == "openai_compatible" and run.model_name == "gpt-4o-mini"
    assert all(request["stream"] is True for request in server.requests)
    assert server.requests[0]["tools"][0]["function"]["name"] in {"echo", "ping"}
    assert {k.lower(): v for k, v in server.headers[0].items()}[
        "authorization"
    ] == "Bearer sk-local-test-key-1234"
    assert run.request_count == 2
    assert (run.input_tokens, run.output_tokens) == (10 * 2 + 10 * 4, 10)
    expected = (
        price_usage("openai_compatible", "gpt-4o-mini", 20, 5).cost_usd
        + price_usage("openai_compatible", "gpt-4o-mini", 40, 5).cost_usd
    )
    assert run.cost_usd == expected > 0 and not run.cost_is_partial


@pytest.mark.django_db
def test_the_plain_non_streamed_path_returns_tool_calls_and_usage(server, org, owner):
    agent = agent_on(org, server, "gpt-4o-mini", owner)
    handle = build_model(
        ModelProfile.objects.get(pk=agent.current_version.spec["model_profile_id"])
    )
    bare = Agent(handle.model)

    @bare.tool_plain
    def echo(text: str) -> str:
        return f"echo: {text}"

    result = asyncio.run(bare.run("use echo now"))

    assert result.output == "The echo said echo: hi."
    assert all(not request.get("stream") for request in server.requests)
    assert result.usage.requests == 2
    # No instructions here: one message, then three (prompt, tool call, tool result).
    assert result.usage.input_tokens == 10 + 30 and result.usage.output_tokens == 10


@pytest.mark.django_db
def test_an_unknown_model_is_booked_at_zero_and_the_run_is_partial_everywhere(
    server, org, owner, member
):
    agent = agent_on(org, server, "house-model-7b", owner)
    run = queued_run(member, org, agent, "hello")

    execute_run(run.pk)

    run.refresh_from_db()
    assert run.status == "completed"
    assert run.output == "Hello from house-model-7b."
    assert run.cost_usd == Decimal("0") and run.cost_is_partial is True
    assert run.input_tokens == 20 and run.output_tokens == 5  # instructions + prompt
    assert LedgerEntry.objects.get(ledger__run=run).priced is False
    assert Message.objects.get(run=run, role="assistant").cost_is_partial is True


@pytest.mark.parametrize("status", [429, 500])
@pytest.mark.django_db
def test_a_provider_error_fails_the_run_with_a_clean_sentence_and_its_spend_recorded(
    status, server, org, owner, member, echo_toolset, caplog
):
    agent = agent_on(
        org, server, f"gpt-4o-mini-{status}", owner, capabilities=[{"id": echo_toolset}]
    )
    run = queued_run(member, org, agent, "go")

    with caplog.at_level(logging.WARNING, logger="apps.runs.runner"):
        execute_run(run.pk)

    run.refresh_from_db()
    assert run.status == "failed"
    assert run.stop_reason == "provider_error"
    expected = {
        429: "The model provider refused the request: rate limited or out of quota (HTTP 429).",
        500: "The model provider failed to answer (HTTP 500).",
    }
    assert run.error == expected[status]
    assert "SECRET-PROVIDER-DETAIL" not in run.error
    # The provider's own words reach the server log only.
    assert "SECRET-PROVIDER-DETAIL" in caplog.text
    # The first request (the tool call) was answered and is booked.
    assert run.request_count == 1
    assert run.input_tokens == 20 and run.output_tokens == 5
    assert LedgerEntry.objects.filter(ledger__run=run).count() == 1
    assert run.cost_is_partial is (run.cost_usd == 0)


@pytest.mark.django_db
@pytest.mark.parametrize(
    "model_name, status", [("house-model-7b", "completed"), ("gpt-4o-mini-500", "failed")]
)
def test_the_runs_own_http_client_is_closed_when_the_run_ends(
    server, org, owner, member, echo_toolset, monkeypatch, model_name, status
):
    """Each run builds its provider client; its connections close with the run, answered or
    failed, instead of waiting for the garbage collector (a worker ends hundreds a minute)."""
    from apps.runs import runner

    handles = []

    def recording_build_model(profile):
        handle = build_model(profile)
        handles.append(handle)
        return handle

    monkeypatch.setattr(runner, "build_model", recording_build_model)
    agent = agent_on(org, server, model_name, owner, capabilities=[{"id": echo_toolset}])
    run = queued_run(member, org, agent, "hello")

    execute_run(run.pk)

    run.refresh_from_db()
    assert run.status == status
    assert len(handles) == 1 and handles[0].own_client is not None
    assert handles[0].own_client.is_closed()
