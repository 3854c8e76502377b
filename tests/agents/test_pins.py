"""A pinned delegate does not move on its own: the Builder shows a pin behind the delegate's
current version and offers to move it (seed 003, "Un delegado fijado no se mueve solo")."""

import pytest
from django.test import Client

from apps.agents.models import AgentVersion
from apps.audit.models import AuditEntry
from tests.runs.factories import published_agent

pytestmark = pytest.mark.django_db


def browser(user):
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def behind(org):
    researcher = published_agent(org, name="Researcher")
    AgentVersion.objects.create(agent=researcher, number=2, spec=researcher.current_version.spec)
    researcher.current_version = AgentVersion.objects.get(agent=researcher, number=2)
    researcher.save(update_fields=["current_version"])
    spec = {
        "instructions": "Orchestrate.",
        "capabilities": [{"id": "subagents"}],
        "subagents": [{"agent_id": researcher.pk, "version": 1}],
    }
    parent = published_agent(org, name="Orchestrator", **spec)
    parent.draft_spec = spec
    parent.save(update_fields=["draft_spec"])
    return parent, researcher


def test_the_builder_shows_a_pin_behind_and_a_builder_moves_it_in_the_draft(behind, builder):
    parent, researcher = behind
    client = browser(builder)

    page = client.get(f"/agents/{parent.pk}/").content.decode()
    assert "v2 is published" in page and "Move to v2" in page

    response = client.post(f"/agents/{parent.pk}/pins/{researcher.pk}/move/")

    assert response.status_code == 302
    parent.refresh_from_db()
    assert parent.draft_spec["subagents"][0]["version"] == 2
    assert parent.current_version.spec["subagents"][0]["version"] == 1  # callers unchanged
    entry = AuditEntry.objects.get(action="agent.pin_move")
    assert entry.details == {"delegate_agent_id": researcher.pk, "from": 1, "to": 2}
    assert "v2 is published" not in client.get(f"/agents/{parent.pk}/").content.decode()


def test_moving_a_pin_needs_agents_edit(behind, viewer):
    parent, researcher = behind
    response = browser(viewer).post(f"/agents/{parent.pk}/pins/{researcher.pk}/move/")
    assert response.status_code == 403
    parent.refresh_from_db()
    assert parent.draft_spec["subagents"][0]["version"] == 1


def test_another_organizations_agent_is_not_found(behind, outsider):
    parent, researcher = behind
    response = browser(outsider).post(f"/agents/{parent.pk}/pins/{researcher.pk}/move/")
    assert response.status_code == 404
