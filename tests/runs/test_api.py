"""The runs API: who may start, read and cancel a run; another organization's run is a 404."""

import pytest

from apps.runs.models import Run

from .factories import published_agent, queued_run


@pytest.fixture
def agent(org):
    return published_agent(org)


@pytest.mark.django_db
def test_starting_a_run_needs_agents_run(org, viewer, agent, client_for):
    response = client_for(viewer, org).post(
        "/api/v1/runs/", {"agent_id": agent.pk, "input": "hi"}, format="json"
    )
    assert response.status_code == 403
    assert not Run.objects.exists()


@pytest.mark.django_db
def test_a_member_starts_a_queued_run(org, member, agent, client_for):
    response = client_for(member, org).post(
        "/api/v1/runs/", {"agent_id": agent.pk, "input": "hi"}, format="json"
    )
    assert response.status_code == 201
    body = response.json()
    assert body["status"] == "queued"
    assert body["cost_usd"] == "0E-8" or float(body["cost_usd"]) == 0
    assert body["cost_is_partial"] is False
    assert body["agent_version_id"] == agent.current_version_id
    assert body["conversation_id"] is not None


@pytest.mark.django_db
def test_a_run_grant_lets_a_viewer_run_that_one_agent(org, builder, viewer, agent, client_for):
    from apps.agents.services import agent_grant

    other = published_agent(org, name="Other")
    agent_grant(actor=builder, agent=agent, user=viewer, actions=["run"])
    client = client_for(viewer, org)

    granted = client.post("/api/v1/runs/", {"agent_id": agent.pk, "input": "hi"}, format="json")
    assert granted.status_code == 201
    refused = client.post("/api/v1/runs/", {"agent_id": other.pk, "input": "hi"}, format="json")
    assert refused.status_code == 403
    assert list(Run.objects.values_list("agent_id", flat=True)) == [agent.pk]
    # The grantee who started the run may stop it, like anyone who started one.
    assert client.post(f"/api/v1/runs/{granted.json()['id']}/cancel/").status_code == 200


@pytest.mark.django_db
def test_the_chat_offers_exactly_the_agents_a_person_may_run(client, org, builder, viewer, agent):
    from apps.agents.selectors import agents_runnable_by
    from apps.agents.services import agent_grant

    published_agent(org, name="Other")
    assert not agents_runnable_by(viewer, org).exists()
    agent_grant(actor=builder, agent=agent, user=viewer, actions=["run"])
    assert list(agents_runnable_by(viewer, org)) == [agent]
    assert agents_runnable_by(builder, org).count() == 2

    client.force_login(viewer)
    page = client.get(f"/chat/?org={org.pk}").content.decode()
    assert f'value="{agent.pk}"' in page and "Other" not in page


@pytest.mark.django_db
def test_another_organizations_agent_is_a_404(org, other_org, outsider, agent, client_for):
    response = client_for(outsider, other_org).post(
        "/api/v1/runs/", {"agent_id": agent.pk, "input": "hi"}, format="json"
    )
    assert response.status_code == 404


@pytest.mark.django_db
def test_an_unpublished_agent_or_an_empty_input_is_a_422(org, member, client_for):
    from apps.agents.models import Agent

    draft_only = Agent.objects.create(organization=org, name="Draft", draft_spec={})
    client = client_for(member, org)
    assert (
        client.post(
            "/api/v1/runs/", {"agent_id": draft_only.pk, "input": "hi"}, format="json"
        ).status_code
        == 422
    )
    published = published_agent(org)
    assert (
        client.post(
            "/api/v1/runs/", {"agent_id": published.pk, "input": ""}, format="json"
        ).status_code
        == 422
    )
    assert (
        client.post("/api/v1/runs/", {"agent_id": "x", "input": "hi"}, format="json").status_code
        == 422
    )


@pytest.mark.django_db
def test_a_conversation_of_another_organization_is_a_404(
    org, other_org, member, outsider, agent, client_for
):
    theirs = queued_run(outsider, other_org, published_agent(other_org))
    response = client_for(member, org).post(
        "/api/v1/runs/",
        {"agent_id": agent.pk, "input": "hi", "conversation_id": theirs.conversation_id},
        format="json",
    )
    assert response.status_code == 404


@pytest.mark.django_db
def test_reading_a_run_own_or_with_runs_view_else_404(
    org, member, admin, operator, builder, viewer, agent, client_for
):
    run = queued_run(member, org, agent)
    assert client_for(member, org).get(f"/api/v1/runs/{run.pk}/").status_code == 200
    for reader in (admin, operator, builder):
        assert client_for(reader, org).get(f"/api/v1/runs/{run.pk}/").status_code == 200
    # A viewer (no runs:view) does not see someone else's run: invisible, not forbidden.
    assert client_for(viewer, org).get(f"/api/v1/runs/{run.pk}/").status_code == 404


@pytest.mark.django_db
def test_another_organizations_run_is_a_404_like_a_missing_one(
    org, other_org, member, outsider, agent, client_for
):
    run = queued_run(member, org, agent)
    client = client_for(outsider, other_org)
    other = client.get(f"/api/v1/runs/{run.pk}/")
    missing = client.get("/api/v1/runs/999999999/")
    assert other.status_code == missing.status_code == 404
    assert other.json() == missing.json()
    assert client.post(f"/api/v1/runs/{run.pk}/cancel/").status_code == 404


@pytest.mark.django_db
def test_the_list_shows_what_the_caller_may_see(org, member, admin, agent, client_for):
    mine = queued_run(member, org, agent)
    theirs = queued_run(admin, org, agent)
    member_ids = {r["id"] for r in client_for(member, org).get("/api/v1/runs/").json()["results"]}
    admin_ids = {r["id"] for r in client_for(admin, org).get("/api/v1/runs/").json()["results"]}
    assert member_ids == {mine.pk}
    assert admin_ids == {mine.pk, theirs.pk}


@pytest.mark.django_db
def test_cancelling_a_queued_run_ends_it_and_is_audited(org, member, agent, client_for):
    from apps.audit.models import AuditEntry

    run = queued_run(member, org, agent)
    response = client_for(member, org).post(f"/api/v1/runs/{run.pk}/cancel/")
    assert response.status_code == 200
    assert response.json()["status"] == "cancelled"
    assert AuditEntry.objects.filter(action="run.cancel", subject_id=str(run.pk)).exists()
    # A finished run cannot be cancelled again.
    assert client_for(member, org).post(f"/api/v1/runs/{run.pk}/cancel/").status_code == 422


@pytest.mark.django_db
def test_a_member_cannot_cancel_someone_elses_run(org, member, admin, agent, client_for):
    run = queued_run(admin, org, agent)
    assert client_for(member, org).post(f"/api/v1/runs/{run.pk}/cancel/").status_code == 404
    assert client_for(admin, org).post(f"/api/v1/runs/{run.pk}/cancel/").status_code == 200
