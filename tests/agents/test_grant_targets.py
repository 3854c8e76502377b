"""Granting on an agent names a member of the agent's organization; anyone else is a 404.

Found by a prober (issue 13, defect 2): the grant looked the user up across the deployment and
answered 422 "EMAIL is not a member of ORG", so walking ids with `agents:edit` listed every
account's email address.
"""

import pytest

from tests.factories import UserFactory

from .conftest import binding, spec_with


@pytest.fixture
def agent(make_agent):
    return make_agent(spec_with(binding("clock")), name="Helper")


@pytest.mark.parametrize("method", ["post", "delete"])
def test_a_user_of_another_org_is_a_404_like_a_missing_id(
    method, client_for, builder, org, agent, outsider
):
    client = client_for(builder, org)
    url = f"/api/v1/agents/{agent.pk}/grants/"
    foreign = getattr(client, method)(
        url, {"user_id": outsider.pk, "actions": ["run"]}, format="json"
    )
    missing = getattr(client, method)(url, {"user_id": 999_999, "actions": ["run"]}, format="json")
    assert foreign.status_code == missing.status_code == 404
    assert foreign.json() == missing.json()
    assert outsider.email not in foreign.content.decode()


def test_an_account_in_no_org_is_a_404_too(client_for, builder, org, agent):
    loner = UserFactory(email="loner@nowhere.test")
    response = client_for(builder, org).post(
        f"/api/v1/agents/{agent.pk}/grants/",
        {"user_id": loner.pk, "actions": ["run"]},
        format="json",
    )
    assert response.status_code == 404
    assert "loner@nowhere.test" not in response.content.decode()


def test_a_member_of_the_org_is_granted(client_for, builder, org, agent, viewer):
    response = client_for(builder, org).post(
        f"/api/v1/agents/{agent.pk}/grants/",
        {"user_id": viewer.pk, "actions": ["run"]},
        format="json",
    )
    assert response.status_code == 200
    assert viewer.has_perm("agents.run_agent", agent)


def test_without_agents_edit_the_grant_is_refused_before_the_user_is_looked_up(
    client_for, member, org, agent, outsider
):
    response = client_for(member, org).post(
        f"/api/v1/agents/{agent.pk}/grants/",
        {"user_id": outsider.pk, "actions": ["run"]},
        format="json",
    )
    assert response.status_code == 403
    assert outsider.email not in response.content.decode()
