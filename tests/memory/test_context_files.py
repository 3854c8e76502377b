"""Context files under /api/v1/context/: the no-permission / permission / other-organization
triplet, audited writes, and the run's read path (context_files_for_run).
"""

import pytest
from django.core.exceptions import PermissionDenied, ValidationError

from apps.audit.models import AuditEntry
from apps.capabilities.run_context import RunResources, ToolsetContext
from apps.capabilities.tools import contributions
from apps.capabilities.tools.context import build_context_toolset
from apps.memory import selectors, services
from apps.memory.models import ContextFile

URL = "/api/v1/context/"

pytestmark = pytest.mark.django_db


@pytest.fixture
def glossary(org, owner):
    return services.context_file_create(
        actor=owner,
        organization=org,
        name="Glossary",
        body="ARR: annual recurring revenue.",
        mode="inject",
    )


@pytest.fixture
def foreign_file(other_org, outsider):
    return services.context_file_create(
        actor=outsider, organization=other_org, name="Secret plan", body="x", mode="link"
    )


# --- the API --------------------------------------------------------------------------------------


def test_a_member_lists_files_without_bodies(client_for, member, org, glossary, foreign_file):
    response = client_for(member, org).get(URL)
    assert response.status_code == 200
    (row,) = response.json()
    assert row["name"] == "Glossary" and row["mode"] == "inject" and row["body_chars"] == 30
    assert "body" not in row


def test_a_member_reads_one_file_with_its_body(client_for, member, org, glossary):
    response = client_for(member, org).get(f"{URL}{glossary.pk}/")
    assert response.status_code == 200
    assert response.json()["body"] == "ARR: annual recurring revenue."


def test_a_file_of_another_organization_is_a_404_like_a_missing_one(
    client_for, builder, org, foreign_file
):
    client = client_for(builder, org)
    foreign = client.get(f"{URL}{foreign_file.pk}/")
    missing = client.get(f"{URL}999999/")
    assert foreign.status_code == missing.status_code == 404
    assert foreign.json() == missing.json()
    assert (
        client.patch(f"{URL}{foreign_file.pk}/", {"body": "pwned"}, format="json").status_code
        == 404
    )
    assert client.delete(f"{URL}{foreign_file.pk}/").status_code == 404
    foreign_file.refresh_from_db()
    assert foreign_file.body == "x"


def test_without_context_edit_a_member_cannot_change_files(client_for, member, org, glossary):
    client = client_for(member, org)
    assert client.post(URL, {"name": "Tone", "body": "warm"}, format="json").status_code == 403
    assert (
        client.patch(f"{URL}{glossary.pk}/", {"body": "changed"}, format="json").status_code == 403
    )
    assert client.delete(f"{URL}{glossary.pk}/").status_code == 403
    glossary.refresh_from_db()
    assert glossary.body == "ARR: annual recurring revenue."


def test_a_builder_creates_changes_and_deletes_a_file_each_audited(client_for, builder, org):
    client = client_for(builder, org)
    created = client.post(
        URL,
        {
            "name": "Escalation",
            "body": "Billing → Ana",
            "mode": "link",
            "description": "Who handles what",
        },
        format="json",
    )
    assert created.status_code == 201, created.json()
    file_id = created.json()["id"]
    assert created.json()["created_by_id"] == builder.pk

    changed = client.patch(f"{URL}{file_id}/", {"mode": "inject"}, format="json")
    assert changed.status_code == 200 and changed.json()["mode"] == "inject"
    assert client.delete(f"{URL}{file_id}/").status_code == 204
    assert not ContextFile.objects.filter(pk=file_id).exists()

    entries = AuditEntry.objects.filter(organization=org, subject_id=str(file_id)).order_by(
        "sequence"
    )
    assert [e.action for e in entries] == ["context.create", "context.update", "context.delete"]
    assert all(e.actor_id == builder.pk for e in entries)
    assert entries[1].details["changed"] == ["mode"] and entries[1].details["before"] == {
        "mode": "link"
    }


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"body": "no name"}, "name"),
        ({"name": "Glossary"}, "name"),  # taken
        ({"name": "Tone", "mode": "sometimes"}, "mode"),
    ],
    ids=["missing name", "duplicate name", "unknown mode"],
)
def test_invalid_input_is_a_422_naming_the_field(client_for, builder, org, glossary, body, field):
    response = client_for(builder, org).post(URL, body, format="json")
    assert response.status_code == 422
    assert field in response.json()


def test_the_same_name_may_exist_in_another_organization(client_for, outsider, other_org, glossary):
    response = client_for(outsider, other_org).post(
        URL, {"name": "Glossary", "body": "theirs"}, format="json"
    )
    assert response.status_code == 201


def test_an_anonymous_request_is_refused(api_client):
    assert api_client.get(URL).status_code in (401, 403)


# --- services -------------------------------------------------------------------------------------


def test_the_service_checks_context_edit_itself(org, member):
    with pytest.raises(PermissionDenied):
        services.context_file_create(actor=member, organization=org, name="Tone")


def test_renaming_onto_a_taken_name_is_refused(org, owner, glossary):
    other = services.context_file_create(actor=owner, organization=org, name="Tone")
    with pytest.raises(ValidationError):
        services.context_file_update(actor=owner, context_file=other, name="Glossary")


# --- what a run receives --------------------------------------------------------------------------


def test_a_run_receives_the_bound_files_of_its_own_organization_in_spec_order(
    org, owner, glossary, foreign_file
):
    matrix = services.context_file_create(
        actor=owner, organization=org, name="Matrix", body="Ana", mode="link"
    )
    files = selectors.context_files_for_run(
        org.pk, [matrix.pk, foreign_file.pk, 424242, glossary.pk, matrix.pk]
    )
    assert [f.name for f in files] == ["Matrix", "Glossary"]
    assert selectors.missing_context_ids(org.pk, [matrix.pk, foreign_file.pk]) == [foreign_file.pk]


def test_the_resolved_files_drive_the_instructions_and_the_tools(org, owner, glossary):
    matrix = services.context_file_create(
        actor=owner, organization=org, name="Matrix", body="Ana", mode="link"
    )
    resources = RunResources(
        context_files=selectors.context_files_for_run(org.pk, [glossary.pk, matrix.pk])
    )
    text = contributions.instructions_for({"id": "context", "config": {}}, resources)
    assert "ARR: annual recurring revenue." in text and "Ana" not in text
    context = ToolsetContext(
        organization_id=org.pk,
        agent_id=1,
        run_id=1,
        user_id=None,
        surface="api",
        resources=resources,
    )
    toolset = build_context_toolset({"id": "context", "config": {}}, context)
    assert set(toolset.tools) == {"list_context", "read_context"}
