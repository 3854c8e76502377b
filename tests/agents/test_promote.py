"""A specialist (inline, or written by the model during a run) kept as a draft agent from the
chat's delegation panel: behind agents:edit, a draft owned by whoever promoted it, nothing else."""

import pytest
from django.test import Client

from apps.agents.models import Agent, ModelProfile
from apps.audit.models import AuditEntry

pytestmark = pytest.mark.django_db

FORM = {"name": "poet", "description": "Writes", "instructions": "Write verse.", "model": "Fast"}


def browser(user):
    client = Client()
    client.force_login(user)
    return client


def test_promoting_a_specialist_creates_a_draft_owned_by_the_promoter(org, builder):
    profile = ModelProfile.objects.create(
        organization=org, label="Fast", provider="offline", model_name="offline"
    )

    response = browser(builder).post("/agents/promote/", FORM)

    agent = Agent.objects.get(organization=org, name="poet")
    assert response.status_code == 302 and response["Location"] == f"/agents/{agent.pk}/"
    assert agent.current_version is None  # a draft: not published, not pinned anywhere
    assert agent.draft_spec["instructions"] == "Write verse."
    assert agent.draft_spec["model_profile_id"] == profile.pk
    assert agent.created_by == builder
    assert AuditEntry.objects.filter(action="agent.promote_specialist").count() == 1


def test_promoting_needs_agents_edit(org, member):
    response = browser(member).post("/agents/promote/", FORM)
    assert response.status_code == 403
    assert not Agent.objects.filter(organization=org, name="poet").exists()


def test_a_promoted_draft_lands_in_the_promoters_own_organization(org, other_org, outsider):
    ModelProfile.objects.create(
        organization=org, label="Fast", provider="offline", model_name="offline"
    )
    browser(outsider).post("/agents/promote/", FORM)
    assert not Agent.objects.filter(organization=org, name="poet").exists()
    # A profile label of another organization is not resolved: the draft uses its own default.
    draft = Agent.objects.get(organization=other_org, name="poet")
    assert draft.draft_spec["model_profile_id"] is None


def test_the_builder_offers_to_keep_an_inline_specialist_as_a_draft(org, builder):
    from tests.runs.factories import published_agent

    spec = {
        "capabilities": [
            {
                "id": "subagents",
                "config": {
                    "inline": [
                        {"name": "writer", "description": "Writes prose.", "instructions": "Write."}
                    ]
                },
            }
        ]
    }
    agent = published_agent(org, name="Orchestrator", **spec)
    agent.draft_spec = {**agent.current_version.spec}
    agent.save(update_fields=["draft_spec"])

    page = browser(builder).get(f"/agents/{agent.pk}/").content.decode()

    assert "Specialists defined here" in page and 'value="writer"' in page
    assert 'action="/agents/promote/"' in page
