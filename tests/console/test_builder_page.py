"""The Builder fits on a screen (issue 15): capabilities folded unless one has an error, each
described once, human labels from the registry, every error in one pass on its field, archive
asks first, and a version reads as YAML with what changed since the one before."""

import re

import pytest

from apps.agents.models import AgentVersion
from apps.agents.services import agent_publish, agent_update_draft
from apps.capabilities.registry import all_capabilities
from apps.capabilities.schema import human_label
from tests.agents.conftest import binding, make_agent, spec_with  # noqa: F401  (fixture)
from tests.agents.test_console import builder_post

pytestmark = pytest.mark.django_db


def _section(page: str, cap_id: str) -> str:
    return page.split(f'id="capability-{cap_id}"', 1)[1].split("</section>", 1)[0]


def test_enabled_capabilities_are_folded_and_described_once(client, builder, make_agent):  # noqa: F811
    agent = make_agent(spec_with(binding("web_research"), binding("planning")))
    client.force_login(builder)
    page = client.get(f"/agents/{agent.pk}/").content.decode()
    for cap_id in ("web_research", "planning"):
        section = _section(page, cap_id)
        assert '<details class="configure">' in section  # folded, though enabled
    planning = next(c for c in all_capabilities() if c.id == "planning")
    summary = planning.description.split("\n\n")[0]
    assert page.count(summary) == 1
    assert 'id="capability-enabled-only"' in page


def test_config_fields_carry_human_labels_from_the_registry():
    for cap in all_capabilities():
        for name, prop in cap.config_schema().get("properties", {}).items():
            title = prop["title"]
            assert title == prop["title"].strip() and title, (cap.id, name)
            assert not re.search(r"\b(Secs|Mb|Id|Ttl|Url)\b", title), (cap.id, name, title)
            assert prop.get("description"), (cap.id, name)
    assert human_label("timeout_secs") == "Timeout (seconds)"
    assert human_label("max_memory_mb") == "Maximum memory (MB)"
    assert human_label("model_profile_id") == "Model profile"


def test_every_error_comes_in_one_pass_on_its_field_with_aria_invalid(
    client,
    builder,
    make_agent,  # noqa: F811
):
    agent = make_agent(spec_with())
    client.force_login(builder)
    # A malformed budget (structural) and a config value publish refuses, in the same post.
    bad = builder_post(
        agent,
        **{
            "budget_monthly_usd": "lots",
            "cap.guardrails.enabled": "on",
            "cap.guardrails.config.phone_regions": "US, UK",
        },
    )
    response = client.post(f"/agents/{agent.pk}/", {**bad, "action": "publish"})
    assert response.status_code == 422
    page = response.content.decode()
    summary = page.split('id="publish-errors"', 1)[1].split("</div>", 1)[0]
    assert 'tabindex="-1"' in page.split('id="publish-errors"', 1)[0][-200:] + summary[:80]
    assert 'href="#budget_monthly_usd">Monthly budget (USD)</a>' in summary
    assert 'href="#cap.guardrails.config.phone_regions">Guardrails · ' in summary
    assert "Input should be" not in summary and "budget.monthly_usd" not in summary
    budget = page.split('id="budget_monthly_usd"', 1)[1].split(">", 1)[0]
    assert 'aria-invalid="true"' in budget
    field = page.split('data-field="phone_regions"', 1)[1].split("</div>", 1)[0]
    assert 'aria-invalid="true"' in field and "UK" in field
    # The capability with the error opens by itself.
    assert '<details class="configure" open>' in _section(page, "guardrails")
    assert not AgentVersion.objects.filter(agent=agent).exists()


def test_archive_asks_for_confirmation(client, builder, make_agent):  # noqa: F811
    agent = make_agent(spec_with())
    client.force_login(builder)
    page = client.get(f"/agents/{agent.pk}/").content.decode()
    form = page.split('id="archive-form"', 1)[1].split(">", 1)[0]
    assert 'data-confirm="Archive Helper?' in form


def test_a_version_reads_as_yaml_with_a_diff_against_the_previous_one(
    client,
    builder,
    make_agent,  # noqa: F811
):
    agent = make_agent(spec_with(binding("planning")))
    agent_publish(actor=builder, agent=agent)
    agent_update_draft(
        actor=builder,
        agent=agent,
        name=agent.name,
        description="",
        spec=spec_with(binding("planning"), instructions="Help politely."),
    )
    agent_publish(actor=builder, agent=agent, note="Politer")
    client.force_login(builder)

    first = client.get(f"/agents/{agent.pk}/versions/1/").content.decode()
    assert "instructions: Help." in first and "Nothing to compare it with." in first
    second = client.get(f"/agents/{agent.pk}/versions/2/").content.decode()
    diff = second.split('id="version-diff"', 1)[1].split("</pre>", 1)[0]
    assert '<span class="del">-instructions: Help.</span>' in diff
    assert '<span class="add">+instructions: Help politely.</span>' in diff
    assert f'href="/agents/{agent.pk}/versions/1/"' in second
    assert '"capabilities"' not in second  # not JSON


def test_try_it_is_offered_once_published(client, builder, make_agent):  # noqa: F811
    agent = make_agent(spec_with())
    client.force_login(builder)
    page = client.get(f"/agents/{agent.pk}/").content.decode()
    assert 'id="try-it-unpublished"' in page and 'class="try-it"' not in page
    agent_publish(actor=builder, agent=agent)
    page = client.get(f"/agents/{agent.pk}/").content.decode()
    assert 'class="try-it"' in page and f'name="agent_id" value="{agent.pk}"' in page
