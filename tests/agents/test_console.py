"""The Builder through Django's test client: forms from the schema, inline errors, versions."""

import pytest
from django.test import Client

from apps.agents.models import Agent, AgentVersion

from .conftest import binding, spec_with

pytestmark = pytest.mark.django_db


@pytest.fixture
def browser_for():
    def make(user):
        client = Client()
        client.force_login(user)
        return client

    return make


def builder_post(agent, **fields):
    """The form as the Builder would send it for this agent's current draft."""
    data = {
        "name": agent.name,
        "instructions": agent.draft.instructions,
        "max_steps": "25",
        "budget_monthly_usd": "",
    }
    for b in agent.draft.capabilities:
        if b.enabled:
            data[f"cap.{b.id}.enabled"] = "on"
    data.update(fields)
    return data


def test_list_shows_agents_and_new_agent_starts_from_the_template(browser_for, builder, org):
    client = browser_for(builder)
    response = client.post("/agents/new/", {"name": "Support"})
    agent = Agent.objects.get(name="Support", organization=org)
    assert response.status_code == 302 and response.url == f"/agents/{agent.pk}/"
    page = client.get("/agents/").content.decode()
    assert "Support" in page and "New agent" in page


def test_builder_draws_forms_from_the_schema_with_labels_and_folds_advanced(
    browser_for, builder, make_agent
):
    agent = make_agent(spec_with(binding("web_research")))
    page = browser_for(builder).get(f"/agents/{agent.pk}/").content.decode()
    assert 'name="cap.web_research.config.method"' in page
    assert "DuckDuckGo — free, no account" in page  # x-enum-labels, not the stored value
    assert 'name="cap.web_search.approval"' not in page
    assert 'name="cap.web_research.tool.web_search.approval"' in page
    assert '<details class="category advanced-group" id="advanced-group">' in page  # folded
    assert 'data-capability="channel_tools"' not in page  # not in the Toolbox at all


def test_enabling_an_advanced_capability_unfolds_the_group(browser_for, builder, make_agent):
    agent = make_agent(spec_with(binding("compaction")))
    page = browser_for(builder).get(f"/agents/{agent.pk}/").content.decode()
    assert '<details class="category advanced-group" id="advanced-group" open>' in page


def test_saving_keeps_only_values_that_differ_from_defaults(browser_for, builder, make_agent):
    agent = make_agent(spec_with())
    data = builder_post(
        agent,
        **{
            "cap.web_research.enabled": "on",
            "cap.web_research.config.method": "duckduckgo",
            "cap.web_research.config.max_results": "8",
            "cap.web_research.tool.web_search.name": "search_news",
        },
    )
    response = browser_for(builder).post(f"/agents/{agent.pk}/", {**data, "action": "save"})
    assert response.status_code == 302
    agent.refresh_from_db()
    [web] = agent.draft.capabilities
    assert web.config == {"max_results": 8}
    assert web.tool_overrides["web_search"].name == "search_news"


def test_publish_refusal_shows_the_error_next_to_its_field_then_publishes_once_fixed(
    browser_for, builder, make_agent
):
    agent = make_agent(spec_with())
    client = browser_for(builder)
    bad = builder_post(
        agent, **{"cap.guardrails.enabled": "on", "cap.guardrails.config.phone_regions": "US, UK"}
    )
    response = client.post(f"/agents/{agent.pk}/", {**bad, "action": "publish"})
    assert response.status_code == 422
    page = response.content.decode()
    field = page.split('data-field="phone_regions"', 1)[1].split("</div>", 1)[0]
    assert "field-error" in field and "UK" in field
    assert not AgentVersion.objects.filter(agent=agent).exists()

    good = builder_post(
        agent, **{"cap.guardrails.enabled": "on", "cap.guardrails.config.phone_regions": "US, GB"}
    )
    response = client.post(f"/agents/{agent.pk}/", {**good, "action": "publish"})
    assert response.status_code == 302
    assert AgentVersion.objects.get(agent=agent).spec["capabilities"][0]["config"] == {
        "phone_regions": "US, GB"
    }
    page = client.get(f"/agents/{agent.pk}/").content.decode()
    assert "v1 published" in page and f"/agents/{agent.pk}/versions/1/" in page


def test_a_viewer_sees_the_builder_read_only_and_cannot_post(browser_for, viewer, make_agent):
    agent = make_agent(spec_with(binding("clock")))
    client = browser_for(viewer)
    page = client.get(f"/agents/{agent.pk}/").content.decode()
    assert "<fieldset disabled>" in page and 'id="publish"' not in page
    assert (
        client.post(f"/agents/{agent.pk}/", builder_post(agent, action="save")).status_code == 403
    )


def test_another_organizations_agent_is_a_404_in_the_console(browser_for, outsider, make_agent):
    agent = make_agent(spec_with())
    assert browser_for(outsider).get(f"/agents/{agent.pk}/").status_code == 404


def test_alert_audiences_and_usage_reports_are_set_in_the_builder(browser_for, builder, make_agent):
    agent = make_agent(spec_with())
    client = browser_for(builder)
    page = client.get(f"/agents/{agent.pk}/").content.decode()
    assert 'name="alerts.budget.audience" value="owner"' in page
    data = builder_post(
        agent,
        **{
            "alerts.shown": "1",
            "alerts.budget.audience": ["owner"],
            "alerts.approvals.audience": ["initiator", "admins"],
            "alerts.usage.audience": ["admins"],
            "alerts.usage.weekly": "on",
        },
    )
    client.post(f"/agents/{agent.pk}/", data)
    agent.refresh_from_db()
    alerts = agent.draft.alerts
    assert alerts.budget.audience == ["owner"]
    assert alerts.usage.weekly and not alerts.usage.monthly
    assert alerts.usage.audience == ["admins"]


def test_budget_warnings_are_set_in_the_builders_limits_form(browser_for, builder, make_agent):
    from decimal import Decimal

    agent = make_agent(spec_with())
    client = browser_for(builder)
    page = client.get(f"/agents/{agent.pk}/").content.decode()
    assert 'id="budget_warn_at" name="budget_warn_at" value="80, 95"' in page
    client.post(f"/agents/{agent.pk}/", builder_post(agent, budget_warn_at="70, 90%"))
    agent.refresh_from_db()
    assert agent.draft.alerts.budget.warn_at == [Decimal("0.7"), Decimal("0.9")]
    assert 'value="70, 90"' in client.get(f"/agents/{agent.pk}/").content.decode()
    # Emptied: no warnings.
    client.post(f"/agents/{agent.pk}/", builder_post(agent, budget_warn_at=""))
    agent.refresh_from_db()
    assert agent.draft.alerts.budget.warn_at == []
