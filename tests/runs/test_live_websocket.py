"""One real websocket client (the `websockets` package) against the real server — uvicorn
serving the ASGI application — with a real Celery worker running the run on the offline model:
frames arrive in order, and a client that drops and reconnects with ?after=SEQ resumes exactly
where it left off, frames sent while it was away included."""

import json

import pytest
from websockets.sync.client import connect

from apps.orgs.services import api_key_create

from .conftest import wait_for
from .factories import published_agent
from .live import asgi_server  # noqa: F401  (fixture)

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_real_client_follows_a_run_and_resumes_after_reconnecting(
    asgi_server,  # noqa: F811  (fixture)
    celery_worker,
    org,
    member,
    client_for,  # noqa: F811
):
    agent = published_agent(org)
    _, key = api_key_create(actor=None, organization=org, user=member, name="ws")
    headers = {"Authorization": f"Bearer {key}"}
    run_id = (
        client_for(member, org)
        .post("/api/v1/runs/", {"agent_id": agent.pk, "input": "/steps 6"}, format="json")
        .json()["id"]
    )

    with connect(
        f"ws://{asgi_server}/ws/runs/{run_id}/", additional_headers=headers, open_timeout=10
    ) as first:
        seen = [json.loads(first.recv(timeout=20)) for _ in range(3)]
    # Away while the run goes on (and most likely ends).
    run = wait_for(run_id)
    assert run.status == "completed", run.error

    rest = []
    with connect(
        f"ws://{asgi_server}/ws/runs/{run_id}/?after={seen[-1]['seq']}",
        additional_headers=headers,
        open_timeout=10,
    ) as again:
        for message in again:
            rest.append(json.loads(message))
        assert again.close_code == 1000

    frames = seen + rest
    assert [f["seq"] for f in frames] == list(range(1, len(frames) + 1))
    assert frames[0]["type"] == "run_started"
    assert {"tool_call", "tool_result", "cost", "context_usage", "text_delta"} <= {
        f["type"] for f in frames
    }
    terminal = frames[-1]
    assert (
        terminal["type"] == "run_finished"
        and terminal["run_id"] == run_id
        and terminal["status"] == "completed"
    )
    assert terminal["cost_usd"] == str(run.cost_usd)
    assert "".join(f["delta"] for f in frames if f["type"] == "text_delta").endswith(run.output)


def test_the_real_server_refuses_another_organizations_run(
    asgi_server,  # noqa: F811  (fixture)
    org,
    other_org,
    member,
    outsider,  # noqa: F811
):
    from websockets.exceptions import ConnectionClosed

    from .factories import queued_run

    run = queued_run(member, org, published_agent(org))
    _, key = api_key_create(actor=None, organization=other_org, user=outsider, name="ws")
    # Refused with the code the docs promise (4404, the same as a missing run), which a real
    # client only receives when the socket is accepted first (an unaccepted close is an HTTP 403).
    with connect(
        f"ws://{asgi_server}/ws/runs/{run.pk}/",
        additional_headers={"Authorization": f"Bearer {key}"},
    ) as refused:
        with pytest.raises(ConnectionClosed):
            refused.recv(timeout=10)
        assert refused.close_code == 4404
