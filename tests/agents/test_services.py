"""Writes: grants, archive, audit in the same transaction."""

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from guardian.shortcuts import assign_perm

from apps.agents import selectors
from apps.agents.services import agent_archive, agent_grant, agent_publish, agent_revoke
from apps.audit.models import AuditEntry

from .conftest import binding, spec_with


def test_a_grant_cannot_give_more_than_the_granter_holds(make_agent, builder, viewer, member):
    agent = make_agent(spec_with())
    assign_perm("agents.change_agent", viewer, agent)
    with pytest.raises(PermissionDenied):
        agent_grant(actor=viewer, agent=agent, user=member, actions=["publish"])
    assert not selectors.can(member, agent, "publish")


def test_grants_and_revokes_are_audited(make_agent, builder, viewer, org):
    agent = make_agent(spec_with())
    agent_grant(actor=builder, agent=agent, user=viewer, actions=["edit", "publish"])
    assert selectors.can(viewer, agent, "publish")
    agent_revoke(actor=builder, agent=agent, user=viewer, actions=["publish"])
    assert not selectors.can(viewer, agent, "publish") and selectors.can(viewer, agent, "edit")
    actions = list(
        AuditEntry.objects.filter(organization=org, subject_id=str(agent.pk)).values_list(
            "action", flat=True
        )
    )
    assert "agent.grant" in actions and "agent.revoke" in actions


def test_grants_are_only_for_members_of_the_agents_organization(make_agent, builder, outsider):
    agent = make_agent(spec_with())
    with pytest.raises(ValidationError):
        agent_grant(actor=builder, agent=agent, user=outsider, actions=["view"])


def test_archive_is_a_state_and_happens_once(make_agent, builder):
    agent = make_agent(spec_with(binding("clock")))
    agent_publish(actor=builder, agent=agent)
    agent_archive(actor=builder, agent=agent)
    with pytest.raises(ValidationError):
        agent_archive(actor=builder, agent=agent)
    with pytest.raises(ValidationError):
        agent_publish(actor=builder, agent=agent)
    agent.refresh_from_db()
    assert agent.versions.count() == 1


def test_a_grant_makes_an_agent_visible_only_in_its_own_organization(
    make_agent, builder, org, other_org, outsider
):
    agent = make_agent(spec_with())
    assign_perm("agents.view_agent", outsider, agent)
    assert selectors.agent_for(outsider, other_org, agent.pk) is None
    assert selectors.agent_for(outsider, org, agent.pk) is None  # not a member of Acme
