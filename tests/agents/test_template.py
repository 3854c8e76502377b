"""The AgenticOS template: every new organization gets it; New agent equals it; Your setup."""

import pytest

from apps.agents.models import Agent
from apps.agents.services import agent_create, ensure_template_agent
from apps.agents.setup import YOUR_SETUP_HEADING, your_setup_section
from apps.agents.template import (
    TEMPLATE_AGENT_NAME,
    new_agent_spec,
    template_spec,
)
from apps.agents.validation import validate_spec
from apps.capabilities.registry import all_capabilities
from apps.orgs.services import organization_create
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def test_a_new_organization_receives_the_published_agenticos_agent():
    owner = UserFactory(email="founder@initech.test")
    organization = organization_create(actor=None, name="Initech", owner=owner)
    template = Agent.objects.get(organization=organization, is_template=True)
    assert template.name == TEMPLATE_AGENT_NAME
    assert template.current_version.number == 1
    assert owner.has_perm("agents.change_agent", template)


def test_the_setup_hook_is_idempotent():
    owner = UserFactory(email="founder@initech.test")
    organization = organization_create(actor=None, name="Initech", owner=owner)
    again = ensure_template_agent(organization=organization, owner=owner)
    assert Agent.objects.filter(organization=organization, is_template=True).count() == 1
    assert again.current_version.number == 1


def test_the_template_binds_exactly_the_recommended_capabilities_built_here_and_passes_publish(
    org, builder
):
    offered = [c.id for c in all_capabilities() if c.recommended and c.available]
    assert [b.id for b in template_spec().capabilities] == offered
    assert "browser_use" not in offered and "ask_user" in offered
    assert "web_research" in offered and "web_fetch" in offered
    assert template_spec().budget.monthly_usd is not None
    assert validate_spec(new_agent_spec(), organization=org, actor=builder) == []


def test_new_agent_equals_the_template(org, builder):
    owner = UserFactory(email="founder@initech.test")
    organization = organization_create(actor=None, name="Initech", owner=owner)
    template = Agent.objects.get(organization=organization, is_template=True)
    fresh = agent_create(actor=owner, organization=organization, name="New agent")
    assert fresh.draft_spec == template.draft_spec == template.current_version.spec
    assert fresh.draft.instructions == template_spec().instructions


def test_your_setup_lists_what_the_agent_has_and_what_would_enable_the_rest():
    text = your_setup_section(
        {"capabilities": [{"id": "clock"}, {"id": "planning", "enabled": False}]}
    )
    assert text.startswith(YOUR_SETUP_HEADING)
    have, lack = text.split("You do not have:")
    assert "(clock)" in have and "(planning" not in have
    assert "(planning, Reasoning)" in lack and "enables Planning" in lack
    assert "(web_research, Research)" in lack
    assert "channel_tools" not in text  # granted per chat binding, never by the spec


def test_your_setup_of_the_template_names_every_capability_it_binds():
    text = your_setup_section(template_spec())
    have = text.split("You do not have:")[0]
    for binding in template_spec().capabilities:
        assert f"({binding.id})" in have


def test_your_setup_lists_a_switched_on_capability_that_is_not_built_under_what_it_cannot_do():
    text = your_setup_section({"capabilities": [{"id": "clock"}, {"id": "browser_use"}]})
    have, rest = text.split("You cannot do yet")
    assert "(clock)" in have and "browser_use" not in have
    cannot, lack = rest.split("You do not have:")
    assert "Web browser (browser_use): you have none of its tools" in cannot
    assert "tools not built yet" in cannot
    assert "browser_use" not in lack
