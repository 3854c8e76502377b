"""A guarded agent on a real provider path: the OpenAI-compatible server on 127.0.0.1 streams its
answer word by word over HTTP, the run is started through the API and executed by a Celery
worker, and the output check still sees the whole part — a blocked term split across chunks ends
the run before any of it is shown."""

import pytest

from apps.runs.choices import RunStatus
from apps.runs.events import frames_after
from tests.runs.conftest import wait_for
from tests.runs.fake_openai import FakeOpenAI
from tests.runs.test_provider_openai_compatible import agent_on


@pytest.fixture
def server(allow_local_model_requests):
    with FakeOpenAI() as fake:
        yield fake


@pytest.mark.django_db(transaction=True)
def test_a_term_split_across_http_stream_chunks_is_caught_through_the_api(
    celery_worker, server, org, owner, member, client_for
):
    # The server answers "Hello from gpt-4o-mini." one word per chunk.
    agent = agent_on(
        org,
        server,
        "gpt-4o-mini",
        owner,
        capabilities=[{"id": "guardrails", "config": {"blocked_keywords_out": "from gpt-4o"}}],
    )
    response = client_for(member, org).post(
        "/api/v1/runs/", {"agent_id": agent.pk, "input": "say hello"}, format="json"
    )
    run = wait_for(response.json()["id"])

    assert run.status == RunStatus.GUARDRAIL_BLOCKED, run.error
    assert all(request["stream"] is True for request in server.requests)
    assert not [f for f in frames_after(run.pk) if f["type"] == "text_delta"]
    assert run.output == ""


@pytest.mark.django_db(transaction=True)
def test_an_unblocked_guarded_answer_arrives_whole_through_the_api(
    celery_worker, server, org, owner, member, client_for
):
    agent = agent_on(
        org,
        server,
        "gpt-4o-mini",
        owner,
        capabilities=[{"id": "guardrails", "config": {"redact_secrets_out": True}}],
    )
    response = client_for(member, org).post(
        "/api/v1/runs/", {"agent_id": agent.pk, "input": "say hello"}, format="json"
    )
    run = wait_for(response.json()["id"])

    assert run.status == RunStatus.COMPLETED, run.error
    deltas = [f["delta"] for f in frames_after(run.pk) if f["type"] == "text_delta"]
    assert deltas == ["Hello from gpt-4o-mini."]  # one checked part, not five words
    assert run.output == "Hello from gpt-4o-mini."
