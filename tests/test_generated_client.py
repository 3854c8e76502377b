"""A client generated from the schema drives the API: the schema is honest enough to build on.

`manage.py spectacular` writes the document, `openapi-python-client` (pinned in
requirements/dev.txt; it works offline) generates a Python package from it, and the test imports
that package and drives the product's main path through it against a live server (uvicorn on the
test database, as `make fuzz` serves it): create an agent with a typed capability binding →
publish → run → read the run → spend → every export, in each format it offers. Every call goes
through the generated code, so a response it cannot parse (a file declared as binary, a
discriminated union it cannot read) fails here, not in a customer's integration.
"""

from __future__ import annotations

import datetime as dt
import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command

from apps.runs.runner import execute_run
from tests.runs.live import asgi_server  # noqa: F401  (fixture)

pytestmark = pytest.mark.timeout(120)

PACKAGE = "agenticos_client"


@pytest.fixture
def generated_client(tmp_path, monkeypatch):
    schema = tmp_path / "openapi.json"
    call_command("spectacular", "--format", "openapi-json", "--file", str(schema))
    # No post hooks: the generator would run ruff over the package, which is not needed to use it.
    config = tmp_path / "generator.yaml"
    config.write_text("post_hooks: []\n")
    generate = subprocess.run(
        [
            str(Path(sys.executable).with_name("openapi-python-client")),
            "generate",
            "--path",
            str(schema),
            "--meta",
            "none",
            "--output-path",
            str(tmp_path / PACKAGE),
            "--config",
            str(config),
        ],
        capture_output=True,
        text=True,
        timeout=90,
        cwd=tmp_path,
    )
    output = generate.stdout + generate.stderr
    assert generate.returncode == 0, output
    # Every operation generated: a warning means one was skipped (the events endpoint's `*/*`
    # was) or a piece is missing.
    assert "Warning" not in output, output
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in [m for m in sys.modules if m == PACKAGE or m.startswith(PACKAGE + ".")]:
        del sys.modules[name]
    yield importlib.import_module(PACKAGE)
    for name in [m for m in sys.modules if m == PACKAGE or m.startswith(PACKAGE + ".")]:
        del sys.modules[name]


def _module(name: str):
    return importlib.import_module(f"{PACKAGE}.{name}")


def test_a_generated_client_drives_agent_publish_run_spend_and_every_export(
    asgi_server,  # noqa: F811
    generated_client,
    org,
    owner,
):
    from apps.orgs.services import api_key_create

    _, key = api_key_create(actor=None, organization=org, user=owner, name="generated client")
    client = generated_client.AuthenticatedClient(
        base_url=f"http://{asgi_server}", token=key, raise_on_unexpected_status=True, timeout=30
    )
    models = _module("models")
    agents = _module("api.agents")
    runs = _module("api.runs")

    # An agent whose spec is built from the typed models: a capability binding with its config.
    spec = models.AgentSpec(
        instructions="Answer briefly.",
        capabilities=[
            models.ClockBinding(
                id=models.ClockBindingId.CLOCK, config=models.ClockConfig(timezone="Europe/Madrid")
            )
        ],
    )
    create = importlib.import_module(f"{agents.__name__}.agents_create")
    agent = create.sync(client=client, body=models.AgentCreateRequest(name="Typed", spec=spec))
    assert isinstance(agent, models.AgentDetail), agent
    (binding,) = agent.spec.capabilities
    assert isinstance(binding, models.ClockBinding)
    assert binding.config.timezone == "Europe/Madrid"

    # A binding outside its capability's schema is refused, naming spec (the schema said so).
    # Sent raw: the generated models would not even carry the unknown key.
    bad = client.get_httpx_client().post(
        "/api/v1/agents/",
        json={"name": "Bad", "spec": {"capabilities": [{"id": "clock", "config": {"zone": "x"}}]}},
    )
    assert bad.status_code == 422 and "spec" in bad.json(), bad.content

    publish = importlib.import_module(f"{agents.__name__}.agents_publish_create")
    version = publish.sync(
        id=str(agent.id), client=client, body=models.PublishRequest(note="first")
    )
    assert isinstance(version, models.AgentVersion), version
    assert version.number == 1
    assert isinstance(version.spec.capabilities[0], models.ClockBinding)

    run_create = importlib.import_module(f"{runs.__name__}.runs_create")
    run = run_create.sync(
        client=client, body=models.RunCreateRequest(agent_id=agent.id, input_="What time is it?")
    )
    assert isinstance(run, models.Run), run
    assert run.status == models.RunStatusEnum.QUEUED
    # The run is executed here, as a worker would take it (the offline model of the org's
    # default profile): no waiting on a queue.
    execute_run(run.id)

    read = importlib.import_module(f"{runs.__name__}.runs_retrieve").sync(
        id=str(run.id), client=client
    )
    assert isinstance(read, models.Run), read
    assert read.status == models.RunStatusEnum.COMPLETED, (read.status, read.error)
    assert read.output
    assert float(read.cost_usd) > 0

    spend = importlib.import_module(f"{PACKAGE}.api.spend.spend_retrieve").sync(
        client=client, days=1
    )
    by_agent = {row["agent_id"]: row for row in spend.to_dict()["by_agent"]}
    assert float(by_agent[agent.id]["cost_usd"]) == float(read.cost_usd)

    today = dt.datetime.now(dt.UTC).date().isoformat()
    exports = {
        "runs": ("started_from", "started_to", _module("models").RunsExportRetrieveFmt),
        "approvals": ("created_from", "created_to", _module("models").ApprovalsExportRetrieveFmt),
        "audit": ("created_from", "created_to", _module("models").AuditExportRetrieveFmt),
        "spend": ("from_", "to", None),
    }
    for table, (start, end, formats) in exports.items():
        export = importlib.import_module(f"{PACKAGE}.api.{table}.{table}_export_retrieve")
        for fmt in list(formats) if formats else [None]:
            arguments = {start: today, end: today, **({"fmt": fmt} if fmt else {})}
            body = export.sync(client=client, **arguments)
            assert isinstance(body, str), (table, fmt, body)
            if fmt is None or fmt.value == "csv":
                header = body.splitlines()[0].split(",")
                assert "id" in header or "agent_id" in header, (table, header)
            else:
                rows = [json.loads(line) for line in body.splitlines()]
                assert all(isinstance(row, dict) for row in rows), (table, rows)
            if table == "runs":
                assert str(run.id) in body
            if table == "audit":
                assert "agent.publish" in body

    # Both ends of the window are required: the generated function will not call without them,
    # and the server refuses a request that leaves one out.
    runs_export = importlib.import_module(f"{runs.__name__}.runs_export_retrieve")
    with pytest.raises(TypeError):
        runs_export.sync(client=client, started_from=today)
    refused = client.get_httpx_client().get("/api/v1/runs/export/", params={"started_from": today})
    assert refused.status_code == 422 and "started_to" in refused.json()
