"""/api/v1/knowledge/skills/: the no-permission / permission / other-organization triplet, the
audit trail of every change, and a 422 naming the field on bad input."""

import pytest

from apps.audit.models import AuditEntry
from apps.knowledge.models import Skill
from apps.knowledge.services import skill_create

pytestmark = pytest.mark.django_db

URL = "/api/v1/knowledge/skills/"


@pytest.fixture
def style(org, owner):
    return skill_create(
        actor=owner,
        organization=org,
        name="house-style",
        description="Use when drafting a customer letter.",
        body="Write short sentences. Sign as The Acme team.",
        files={"template.md": "Dear {name},"},
    )


@pytest.fixture
def theirs(other_org, outsider):
    return skill_create(
        actor=outsider, organization=other_org, name="secret-recipe", description="Theirs."
    )


def test_a_builder_creates_updates_and_deletes_a_skill_each_audited(client_for, builder, org):
    client = client_for(builder, org)
    created = client.post(
        URL,
        {
            "name": "incident-response",
            "description": "Use when an outage is reported.",
            "body": "1. Open a channel.\n2. Page the on-call.",
            "files": {"checklist.md": "- status page"},
        },
        format="json",
    )
    assert created.status_code == 201, created.json()
    body = created.json()
    assert body["name"] == "incident-response" and body["files"] == {
        "checklist.md": "- status page"
    }
    skill_id = body["id"]

    patched = client.patch(f"{URL}{skill_id}/", {"body": "1. Breathe."}, format="json")
    assert patched.status_code == 200, patched.json()
    assert patched.json()["body"] == "1. Breathe."
    assert patched.json()["description"] == "Use when an outage is reported."

    put = client.put(
        f"{URL}{skill_id}/",
        {"name": "outage", "description": "Outages.", "files": {}},
        format="json",
    )
    assert put.status_code == 200 and put.json()["name"] == "outage" and put.json()["files"] == {}

    assert client.get(URL).json()[0]["name"] == "outage"
    assert client.delete(f"{URL}{skill_id}/").status_code == 204
    assert not Skill.objects.filter(pk=skill_id).exists()
    actions = list(
        AuditEntry.objects.filter(organization=org, action__startswith="knowledge.skill.")
        .order_by("pk")
        .values_list("action", flat=True)
    )
    assert actions == [
        "knowledge.skill.create",
        "knowledge.skill.update",
        "knowledge.skill.update",
        "knowledge.skill.delete",
    ]


def test_a_member_reads_skills_but_may_not_change_them(client_for, member, org, style):
    client = client_for(member, org)
    listed = client.get(URL)
    assert listed.status_code == 200 and [s["name"] for s in listed.json()] == ["house-style"]
    assert client.get(f"{URL}{style.pk}/").json()["body"].startswith("Write short")
    assert client.post(URL, {"name": "x", "description": "y"}, format="json").status_code == 403
    assert client.patch(f"{URL}{style.pk}/", {"body": "hacked"}, format="json").status_code == 403
    assert client.delete(f"{URL}{style.pk}/").status_code == 403
    style.refresh_from_db()
    assert style.body.startswith("Write short")
    assert not AuditEntry.objects.filter(action="knowledge.skill.update").exists()


def test_another_organizations_skill_is_a_404_and_never_listed(client_for, builder, org, theirs):
    client = client_for(builder, org)
    assert client.get(URL).json() == []
    assert client.get(f"{URL}{theirs.pk}/").status_code == 404
    assert client.patch(f"{URL}{theirs.pk}/", {"body": "x"}, format="json").status_code == 404
    assert client.delete(f"{URL}{theirs.pk}/").status_code == 404
    assert Skill.objects.filter(pk=theirs.pk, body="").exists()


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"description": "No name."}, "name"),
        ({"name": "Not A Slug", "description": "d"}, "name"),
        ({"name": "ok"}, "description"),
        ({"name": "ok", "description": "   "}, "description"),
        ({"name": "ok", "description": "d", "files": ["a.md"]}, "files"),
        ({"name": "ok", "description": "d", "files": {"../etc/passwd": "x"}}, "files"),
        ({"name": "ok", "description": "d", "files": {"a.md": ["x"]}}, "files"),
        ({"name": "ok", "description": "d", "files": {"a.md": 3}}, "files"),
        ({"name": "ok", "description": "d", "body": 0}, "body"),
        ({"name": "house-style", "description": "Duplicate name."}, "name"),
    ],
)
def test_bad_input_is_a_422_naming_the_field(client_for, builder, org, style, payload, field):
    response = client_for(builder, org).post(URL, payload, format="json")
    assert response.status_code == 422, response.json()
    assert field in response.json()
