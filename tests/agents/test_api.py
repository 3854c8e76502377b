"""The agents API: each endpoint with the no-permission / permission / other-organization triplet."""

import pytest
from guardian.shortcuts import assign_perm

from apps.agents.models import Agent, AgentStatus
from apps.agents.services import agent_publish
from apps.agents.template import new_agent_spec
from apps.audit.models import AuditEntry

from .conftest import binding, spec_with


@pytest.fixture
def agent(make_agent):
    return make_agent(spec_with(binding("clock")), name="Helper")


@pytest.fixture
def theirs(other_org, outsider, make_agent):
    return make_agent(spec_with(), name="Theirs", actor=outsider, organization=other_org)


# --- list ------------------------------------------------------------------------------------


def test_list_shows_the_published_versions_budget(client_for, builder, org, agent):
    agent.draft_spec["budget"] = {"monthly_usd": "12.50"}
    agent.save()
    agent_publish(actor=builder, agent=agent)
    agent.refresh_from_db()
    agent.draft_spec["budget"] = {
        "monthly_usd": "99.00"
    }  # a draft change is not the budget in force
    agent.save()
    rows = client_for(builder, org).get("/api/v1/agents/").json()
    row = next(r for r in rows if r["id"] == agent.pk)
    assert row["budget_monthly_usd"] == "12.50"
    assert row["current_version"] == 1


def test_list_never_shows_another_organizations_agents(client_for, viewer, org, agent, theirs):
    ids = {r["id"] for r in client_for(viewer, org).get("/api/v1/agents/").json()}
    assert agent.pk in ids and theirs.pk not in ids


def test_list_rejects_a_malformed_filter_with_422(client_for, viewer, org):
    assert client_for(viewer, org).get("/api/v1/agents/?include_archived=maybe").status_code == 422


def test_list_needs_authentication(api_client):
    assert api_client.get("/api/v1/agents/").status_code in (401, 403)


# --- create ----------------------------------------------------------------------------------


def test_member_without_agents_edit_cannot_create(client_for, member, org):
    response = client_for(member, org).post("/api/v1/agents/", {"name": "Mine"}, format="json")
    assert response.status_code == 403


def test_builder_creates_an_agent_and_new_agent_is_the_template(client_for, builder, org):
    response = client_for(builder, org).post("/api/v1/agents/", {"name": "Mine"}, format="json")
    assert response.status_code == 201
    body = response.json()
    assert body["spec"] == new_agent_spec()
    assert body["permissions"] == {"view": True, "edit": True, "run": True, "publish": True}
    assert Agent.objects.get(pk=body["id"]).organization == org


def test_create_with_a_malformed_spec_is_422(client_for, builder, org):
    response = client_for(builder, org).post(
        "/api/v1/agents/",
        {"name": "Bad", "spec": {"capabilities": [{"id": "clock", "approval": "sometimes"}]}},
        format="json",
    )
    assert response.status_code == 422


def test_create_lands_in_the_keys_organization_only(client_for, outsider, other_org):
    response = client_for(outsider, other_org).post(
        "/api/v1/agents/", {"name": "Globex bot"}, format="json"
    )
    assert Agent.objects.get(pk=response.json()["id"]).organization == other_org


# --- retrieve / patch / delete ---------------------------------------------------------------


def test_retrieve_of_another_organizations_agent_is_a_404_like_a_missing_id(
    client_for, owner, org, theirs
):
    client = client_for(owner, org)
    other = client.get(f"/api/v1/agents/{theirs.pk}/")
    missing = client.get("/api/v1/agents/999999/")
    assert other.status_code == missing.status_code == 404
    assert other.json() == missing.json()


def test_viewer_cannot_change_the_draft(client_for, viewer, org, agent):
    response = client_for(viewer, org).patch(
        f"/api/v1/agents/{agent.pk}/", {"name": "Renamed"}, format="json"
    )
    assert response.status_code == 403


def test_builder_changes_the_draft(client_for, builder, org, agent):
    spec = spec_with(binding("clock"), binding("planning"))
    response = client_for(builder, org).patch(
        f"/api/v1/agents/{agent.pk}/", {"spec": spec}, format="json"
    )
    assert response.status_code == 200
    assert [b["id"] for b in response.json()["spec"]["capabilities"]] == ["clock", "planning"]


def test_patch_of_another_organizations_agent_is_404(client_for, owner, org, theirs):
    assert (
        client_for(owner, org)
        .patch(f"/api/v1/agents/{theirs.pk}/", {"name": "x"}, format="json")
        .status_code
        == 404
    )


def test_an_object_grant_lets_a_viewer_edit_one_agent(client_for, viewer, org, agent, builder):
    from apps.agents.services import agent_grant

    agent_grant(actor=builder, agent=agent, user=viewer, actions=["edit"])
    response = client_for(viewer, org).patch(
        f"/api/v1/agents/{agent.pk}/", {"name": "Ours"}, format="json"
    )
    assert response.status_code == 200
    assert AuditEntry.objects.filter(action="agent.grant", organization=org).exists()


def test_delete_archives_and_is_audited(client_for, builder, org, agent):
    assert client_for(builder, org).delete(f"/api/v1/agents/{agent.pk}/").status_code == 204
    agent.refresh_from_db()
    assert agent.status == AgentStatus.ARCHIVED
    assert AuditEntry.objects.filter(action="agent.archive", organization=org).exists()
    ids = {r["id"] for r in client_for(builder, org).get("/api/v1/agents/").json()}
    assert agent.pk not in ids
    ids = {
        r["id"]
        for r in client_for(builder, org).get("/api/v1/agents/?include_archived=true").json()
    }
    assert agent.pk in ids


def test_member_cannot_archive_and_another_org_cannot_see(
    client_for, member, owner, org, agent, theirs
):
    assert client_for(member, org).delete(f"/api/v1/agents/{agent.pk}/").status_code == 403
    assert client_for(owner, org).delete(f"/api/v1/agents/{theirs.pk}/").status_code == 404


# --- publish -----------------------------------------------------------------------------------


def test_publish_answers_the_new_version_and_is_audited(client_for, builder, org, agent):
    response = client_for(builder, org).post(
        f"/api/v1/agents/{agent.pk}/publish/", {}, format="json"
    )
    assert response.status_code == 201
    assert response.json()["number"] == 1
    assert AuditEntry.objects.filter(action="agent.publish", organization=org).count() == 1


def test_publish_refusal_is_422_naming_binding_and_field(client_for, builder, org, agent):
    client = client_for(builder, org)
    client.patch(
        f"/api/v1/agents/{agent.pk}/",
        {
            "spec": spec_with(
                binding("web_fetch", {"method": "native"}, tool_approval={"web_fetch": "required"})
            )
        },
        format="json",
    )
    response = client.post(f"/api/v1/agents/{agent.pk}/publish/", {}, format="json")
    assert response.status_code == 422
    [error] = response.json()["errors"]
    assert error["binding"] == "web_fetch" and error["field"] == "tool_approval.web_fetch"
    assert error["message"]


def test_operator_cannot_publish(client_for, operator, org, agent):
    assert (
        client_for(operator, org)
        .post(f"/api/v1/agents/{agent.pk}/publish/", {}, format="json")
        .status_code
        == 403
    )


def test_publish_of_another_organizations_agent_is_404(client_for, owner, org, theirs):
    assert (
        client_for(owner, org)
        .post(f"/api/v1/agents/{theirs.pk}/publish/", {}, format="json")
        .status_code
        == 404
    )


def test_an_object_grant_lets_an_operator_publish(client_for, operator, org, agent):
    assign_perm("agents.publish_agent", operator, agent)
    assert (
        client_for(operator, org)
        .post(f"/api/v1/agents/{agent.pk}/publish/", {}, format="json")
        .status_code
        == 201
    )


# --- versions and tools ------------------------------------------------------------------------


def test_versions_are_numbered_and_frozen(client_for, builder, viewer, org, agent):
    client = client_for(builder, org)
    client.post(f"/api/v1/agents/{agent.pk}/publish/", {}, format="json")
    client.patch(
        f"/api/v1/agents/{agent.pk}/", {"spec": spec_with(binding("planning"))}, format="json"
    )
    client.post(f"/api/v1/agents/{agent.pk}/publish/", {}, format="json")
    versions = client_for(viewer, org).get(f"/api/v1/agents/{agent.pk}/versions/").json()
    assert [v["number"] for v in versions] == [2, 1]
    assert [b["id"] for b in versions[1]["spec"]["capabilities"]] == ["clock"]


def test_versions_of_another_organizations_agent_are_404(client_for, owner, org, theirs):
    assert client_for(owner, org).get(f"/api/v1/agents/{theirs.pk}/versions/").status_code == 404


def test_tools_lists_the_published_versions_tools(client_for, builder, org, agent, as_if_built):
    as_if_built("sandbox")
    client = client_for(builder, org)
    assert client.get(f"/api/v1/agents/{agent.pk}/tools/").status_code == 422
    client.patch(
        f"/api/v1/agents/{agent.pk}/",
        {
            "spec": spec_with(
                binding(
                    "sandbox",
                    tool_overrides={"write_file": {"name": "save"}},
                    tool_approval={"write_file": "required"},
                )
            )
        },
        format="json",
    )
    client.post(f"/api/v1/agents/{agent.pk}/publish/", {}, format="json")
    body = client.get(f"/api/v1/agents/{agent.pk}/tools/").json()
    save = next(t for t in body["tools"] if t["tool_id"] == "write_file")
    assert save["name"] == "save" and save["approval"] == "required"
    assert [w["tool_id"] for w in body["withheld"]] == ["execute"]


# --- model profiles ----------------------------------------------------------------------------


def test_model_profiles_triplet_and_write_only_secret(
    client_for, owner, member, org, outsider, other_org, make_secret
):
    key = make_secret(name="openai", purpose="openai")
    payload = {"label": "GPT", "provider": "openai", "model_name": "gpt-5", "secret_id": key.pk}
    assert (
        client_for(member, org).post("/api/v1/model-profiles/", payload, format="json").status_code
        == 403
    )
    created = client_for(owner, org).post("/api/v1/model-profiles/", payload, format="json")
    assert created.status_code == 201
    body = created.json()
    assert body["has_secret"] is True and "secret_id" not in body and "secret" not in body
    assert client_for(member, org).get(f"/api/v1/model-profiles/{body['id']}/").status_code == 200
    assert (
        client_for(outsider, other_org).get(f"/api/v1/model-profiles/{body['id']}/").status_code
        == 404
    )
    foreign = client_for(outsider, other_org).post(
        "/api/v1/model-profiles/", payload, format="json"
    )
    assert foreign.status_code == 422  # their vault has no such secret


def test_a_model_profiles_request_timeout_is_set_and_changed_through_the_api(
    client_for, owner, org, make_secret
):
    key = make_secret(name="openai", purpose="openai")
    client = client_for(owner, org)
    payload = {"label": "GPT", "provider": "openai", "model_name": "gpt-5", "secret_id": key.pk}
    default = client.post("/api/v1/model-profiles/", payload, format="json")
    assert default.status_code == 201 and default.json()["request_timeout_seconds"] == 120
    quick = client.post(
        "/api/v1/model-profiles/",
        {**payload, "label": "Quick", "request_timeout_seconds": 5, "is_default": True},
        format="json",
    )
    assert quick.status_code == 201, quick.content
    assert quick.json()["request_timeout_seconds"] == 5
    changed = client.patch(
        f"/api/v1/model-profiles/{quick.json()['id']}/",
        {"request_timeout_seconds": 30},
        format="json",
    )
    assert changed.status_code == 200 and changed.json()["request_timeout_seconds"] == 30
