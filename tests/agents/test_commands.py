"""`agenticos tools ls` and `agenticos spec validate / export / import`."""

import json
from io import StringIO

import pytest
import yaml
from django.core.management import call_command
from django.core.management.base import CommandError

from apps.agents.models import Agent
from apps.agents.services import agent_publish

from .conftest import binding, spec_with


def run(*args):
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


@pytest.fixture
def published(make_agent, builder, as_if_built):
    as_if_built("sandbox")
    agent = make_agent(
        spec_with(
            binding(
                "sandbox",
                tool_overrides={"write_file": {"name": "save_notes"}},
                tool_approval={"read_file": "required"},
            ),
            binding("planning", enabled=False),
        )
    )
    agent_publish(actor=builder, agent=agent)
    agent.refresh_from_db()
    return agent


def test_tools_ls_prints_every_tool_with_name_approval_and_side_effects(published):
    out = run("tools", "ls", "--agent", str(published.pk))
    lines = out.splitlines()
    assert lines[1].split() == ["NAME", "CAPABILITY", "TOOL", "ID", "APPROVAL", "SIDE", "EFFECTS"]
    save = next(line for line in lines if line.startswith("save_notes"))
    assert "write_file" in save and "(renamed)" in save
    read = next(line for line in lines if line.startswith("read_file"))
    assert "required" in read.split("read_file", 2)[-1]
    assert "sandbox.execute: not offered with this configuration" in out
    assert "Disabled capabilities: planning" in out


def test_tools_ls_json(published):
    payload = json.loads(run("tools", "ls", "--agent", str(published.pk), "--json"))
    assert payload["agent"]["source"] == "v1"
    by_id = {t["tool_id"]: t for t in payload["tools"]}
    assert by_id["write_file"]["name"] == "save_notes"
    assert by_id["read_file"]["approval"] == "required"
    assert payload["disabled_capabilities"] == ["planning"]


def test_tools_ls_of_an_unpublished_agent_says_what_to_do(make_agent):
    agent = make_agent(spec_with(binding("clock")))
    with pytest.raises(CommandError, match="--draft"):
        run("tools", "ls", "--agent", str(agent.pk))


def test_spec_validate_accepts_a_good_file_and_refuses_a_bad_one(tmp_path, db):
    good = tmp_path / "good.yaml"
    good.write_text(yaml.safe_dump(spec_with(binding("web_research", {"max_results": 3}))))
    assert "OK" in run("spec", "validate", str(good))
    bad = tmp_path / "bad.json"
    bad.write_text(
        json.dumps(
            spec_with(binding("channel_tools"), binding("guardrails", {"phone_regions": "UK"}))
        )
    )
    out = StringIO()
    with pytest.raises(CommandError, match="2 error"):
        call_command("spec", "validate", str(bad), stdout=out)
    assert (
        "channel_tools: id" in out.getvalue()
        and "guardrails: config.phone_regions" in out.getvalue()
    )


def test_spec_validate_with_an_org_checks_the_vault(tmp_path, org):
    path = tmp_path / "paid.yaml"
    path.write_text(yaml.safe_dump(spec_with(binding("web_research", {"method": "exa"}))))
    assert "OK" in run("spec", "validate", str(path))
    with pytest.raises(CommandError):
        run("spec", "validate", str(path), "--org", org.slug)


def test_spec_export_import_round_trips_an_agent(tmp_path, published, other_org):
    exported = run("spec", "export", "--agent", str(published.pk))
    path = tmp_path / "agent.yaml"
    path.write_text(exported)
    out = run("spec", "import", str(path), "--org", other_org.slug, "--publish")
    assert "published v1" in out
    copy = Agent.objects.get(organization=other_org, name=published.name)
    assert copy.current_version.spec == published.current_version.spec
    assert yaml.safe_load(exported)["spec"] == published.current_version.spec
