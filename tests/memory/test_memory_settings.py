"""Settings → Memory (everyone sees their own: stop using, use again, delete, the index trimmed, a
suspended name revived by a rewrite), the deployment admin's read (audited without content), the
erase endpoint's triplet, the organization switch, and the Builder's "Empty this agent's memory"."""

import pytest

from apps.audit.models import AuditEntry
from apps.memory import services
from apps.memory.models import MemoryNote
from apps.orgs.services import organization_update
from tests.runs.factories import published_agent

from .support import returns_of, run_now, slash_call

pytestmark = pytest.mark.django_db

INDEX = (
    "- preferences.md — language and tone\n"
    "- projects.md — what they work on (see preferences.md too)\n"
    "- The person's language preference is kept in a separate note\n"
    "- old-preferences.md — superseded\n"
)


@pytest.fixture
def agent(org, owner):
    return published_agent(
        org, name="Scribe", created_by=owner, capabilities=[{"id": "memory_files"}]
    )


@pytest.fixture
def notes(org, agent, member):
    def make(name, body):
        return MemoryNote.objects.create(
            organization=org, agent=agent, owner_user=member, name=name, body=body
        )

    return {
        "index": make("MEMORY.md", INDEX),
        "prefs": make("preferences.md", "Answers in Polish."),
        "projects": make("projects.md", "Atlas migration."),
    }


def test_a_viewer_and_an_owner_each_see_only_their_own_notes(
    client, org, agent, viewer, owner, notes
):
    client.force_login(viewer)
    page = client.get("/settings/memory/").content.decode()
    assert "No agent here has written anything about you." in page
    client.force_login(owner)
    assert "preferences.md" not in client.get("/settings/memory/").content.decode()


def test_the_person_sees_each_note_with_the_agent_that_wrote_it_and_when(client, member, notes):
    client.force_login(member)
    page = client.get("/settings/memory/").content.decode()
    assert "<summary>preferences.md</summary>" in page and "Answers in Polish." in page
    assert "<td>Scribe</td>" in page
    assert notes["prefs"].updated_at.strftime("%Y-%m-%d") in page
    assert 'href="/settings/memory/" aria-current="page"' in page


def test_stopping_a_note_hides_it_from_every_tool_and_trims_the_index_lines_naming_it(
    client, org, member, agent, notes
):
    client.force_login(member)
    client.post(f"/settings/memory/{notes['prefs'].pk}/suspend/")
    notes["prefs"].refresh_from_db()
    assert notes["prefs"].suspended_at is not None  # it still exists, to look at and restore
    notes["index"].refresh_from_db()
    assert notes["index"].body == (
        "- The person's language preference is kept in a separate note\n"
        "- old-preferences.md — superseded\n"
    )
    for call in (
        slash_call("read_memory", name="preferences.md"),
        slash_call("edit_memory", name="preferences.md", old_string="Polish", new_string="x"),
        "/call list_memory {}",
    ):
        run = run_now(member, org, agent, call)
        assert "Answers in Polish" not in returns_of(run)[-1]
        assert "preferences.md (" not in returns_of(run)[-1]
    page = client.get("/settings/memory/").content.decode()
    assert "Not used" in page and "Use again" in page


def test_using_a_note_again_restores_it_without_its_index_line(client, member, notes):
    client.force_login(member)
    client.post(f"/settings/memory/{notes['prefs'].pk}/suspend/")
    client.post(f"/settings/memory/{notes['prefs'].pk}/restore/")
    notes["prefs"].refresh_from_db()
    notes["index"].refresh_from_db()
    assert notes["prefs"].suspended_at is None
    assert "- preferences.md — language and tone" not in notes["index"].body


def test_a_suspended_name_stays_taken_and_a_rewrite_revives_it_with_new_content(
    client, org, member, agent, notes
):
    client.force_login(member)
    client.post(f"/settings/memory/{notes['prefs'].pk}/suspend/")
    run = run_now(
        member,
        org,
        agent,
        slash_call("write_memory", name="preferences.md", content="English now."),
    )
    assert "Wrote note 'preferences.md'" in returns_of(run)[-1]
    (row,) = MemoryNote.objects.filter(owner_user=member, name="preferences.md")
    assert row.pk == notes["prefs"].pk and row.body == "English now." and row.suspended_at is None


def test_deleting_a_note_removes_it_and_its_index_lines(client, member, notes):
    client.force_login(member)
    page = client.get("/settings/memory/").content.decode()
    assert 'data-confirm="Delete the note preferences.md?' in page
    client.post(f"/settings/memory/{notes['prefs'].pk}/delete/")
    assert not MemoryNote.objects.filter(pk=notes["prefs"].pk).exists()
    notes["index"].refresh_from_db()
    assert "- preferences.md —" not in notes["index"].body
    entry = AuditEntry.objects.get(action="memory.note_deleted")
    assert "Answers in Polish" not in str(entry.details) and entry.details["index_trimmed"]


def test_nobody_changes_another_persons_note(client, owner, notes):
    client.force_login(owner)
    assert client.post(f"/settings/memory/{notes['prefs'].pk}/delete/").status_code == 404
    assert MemoryNote.objects.filter(pk=notes["prefs"].pk).exists()


def test_agents_bound_to_mem0_are_named_as_not_listable(client, org, owner, member):
    from apps.vault.services import secret_create

    key = secret_create(actor=owner, organization=org, name="m", purpose="capability", value="k")
    published_agent(
        org,
        name="Recaller",
        created_by=owner,
        capabilities=[{"id": "memory_mem0", "secret_id": key.pk}],
    )
    client.force_login(member)
    page = client.get("/settings/memory/").content.decode()
    assert "<strong>Recaller</strong>" in page and "this list is not complete" in page


def test_erase_from_the_page(client, member, notes):
    client.force_login(member)
    response = client.post("/settings/memory/erase/", follow=True)
    assert "Erased 3 note(s)" in response.content.decode()
    assert not MemoryNote.objects.filter(owner_user=member).exists()


# --- the deployment admin's read ------------------------------------------------------------------

URL = "/api/v1/memory/person/{}/"


def test_a_deployment_admin_reads_a_persons_memory_and_it_is_audited_without_content(
    api_client, app_admin, org, member, notes
):
    api_client.force_authenticate(app_admin)
    response = api_client.get(
        URL.format(member.pk) + "?reason=subject+access+request+%2342",
        HTTP_X_ORGANIZATION_ID=str(org.pk),
    )
    assert response.status_code == 200
    body = response.json()
    assert {n["name"] for n in body["notes"]} == {"MEMORY.md", "preferences.md", "projects.md"}
    assert body["organization_id"] == org.pk and body["person_id"] == member.pk
    entry = AuditEntry.objects.get(action="memory.admin_read")
    assert entry.actor_id == app_admin.pk and entry.organization_id == org.pk
    assert entry.subject_id == str(member.pk) or entry.subject_id == member.pk
    assert entry.details == {"reason": "subject access request #42", "notes": 3}
    assert "Polish" not in str(entry.details)


@pytest.mark.parametrize("role", ["owner", "admin", "builder"])
def test_an_organization_role_is_refused(request, api_client, org, member, notes, role):
    person = request.getfixturevalue(role)
    api_client.force_authenticate(person)
    response = api_client.get(
        URL.format(member.pk) + "?reason=curious", HTTP_X_ORGANIZATION_ID=str(org.pk)
    )
    assert response.status_code == 403
    assert not AuditEntry.objects.filter(action="memory.admin_read").exists()


def test_the_reason_and_the_tenant_are_required(api_client, app_admin, org, member):
    api_client.force_authenticate(app_admin)
    no_reason = api_client.get(URL.format(member.pk), HTTP_X_ORGANIZATION_ID=str(org.pk))
    assert no_reason.status_code == 422 and "reason" in no_reason.json()
    no_tenant = api_client.get(URL.format(member.pk) + "?reason=x")
    assert no_tenant.status_code == 422 and "X-Organization-Id" in no_tenant.json()


def test_a_person_of_another_tenant_is_a_404_like_none(api_client, app_admin, org, outsider):
    api_client.force_authenticate(app_admin)
    foreign = api_client.get(
        URL.format(outsider.pk) + "?reason=x", HTTP_X_ORGANIZATION_ID=str(org.pk)
    )
    missing = api_client.get(URL.format(999999) + "?reason=x", HTTP_X_ORGANIZATION_ID=str(org.pk))
    assert foreign.status_code == missing.status_code == 404
    assert foreign.json() == missing.json()


# --- erase over the API ----------------------------------------------------------------------------

ERASE = "/api/v1/memory/person/{}/erase/"


def test_a_person_erases_their_own_memory_over_the_api(client_for, org, member, notes):
    response = client_for(member, org).post(ERASE.format(member.pk))
    assert response.status_code == 200 and response.json() == {"notes": 3, "mem0_spaces": 0}


def test_erasing_another_person_needs_members_manage(
    client_for, org, builder, admin, member, notes
):
    assert client_for(builder, org).post(ERASE.format(member.pk)).status_code == 403
    assert MemoryNote.objects.filter(owner_user=member).count() == 3
    assert client_for(admin, org).post(ERASE.format(member.pk)).status_code == 200
    assert not MemoryNote.objects.filter(owner_user=member).exists()


def test_erasing_a_person_of_another_organization_is_a_404(client_for, org, admin, outsider):
    assert client_for(admin, org).post(ERASE.format(outsider.pk)).status_code == 404


# --- the switch and the Builder --------------------------------------------------------------------


def test_allow_personal_memory_is_changed_with_settings_manage_and_audited(org, owner, builder):
    from django.core.exceptions import PermissionDenied

    with pytest.raises(PermissionDenied):
        organization_update(actor=builder, organization=org, allow_personal_memory=False)
    organization_update(actor=owner, organization=org, allow_personal_memory=False)
    org.refresh_from_db()
    assert org.allow_personal_memory is False
    entry = AuditEntry.objects.filter(action="org.update").latest("pk")
    assert entry.details["allow_personal_memory"] == {"from": True, "to": False}


def test_the_organization_page_offers_the_switch(client, owner):
    client.force_login(owner)
    page = client.get("/settings/organization/").content.decode()
    assert "Allow personal memory" in page
    client.post(
        "/settings/organization/",
        {"name": "Acme", "monthly_budget_usd": "", "chat_may_waive_approvals": ""},
    )
    owner.memberships.first().organization.refresh_from_db()
    assert owner.memberships.first().organization.allow_personal_memory is False


def test_the_builder_empties_the_agents_memory(client, org, owner, agent, notes):
    client.force_login(owner)
    page = client.get(f"/agents/{agent.pk}/").content.decode()
    assert 'form="empty-memory-form"' in page and "Empty this agent's memory" in page
    response = client.post(f"/agents/{agent.pk}/memory/empty/", follow=True)
    assert "Emptied Scribe" in response.content.decode()
    assert not MemoryNote.objects.filter(agent=agent).exists()


def test_a_member_cannot_empty_an_agents_memory(client, member, agent, notes):
    client.force_login(member)
    client.post(f"/agents/{agent.pk}/memory/empty/")
    assert MemoryNote.objects.filter(agent=agent).count() == 3


def test_the_service_refuses_a_person_changing_someone_elses_note(owner, notes):
    from django.core.exceptions import PermissionDenied

    with pytest.raises(PermissionDenied):
        services.memory_note_suspend(actor=owner, note=notes["prefs"])


def test_members_manage_erases_a_members_memory_from_the_members_page(client, admin, member, notes):
    client.force_login(admin)
    page = client.get("/settings/members/").content.decode()
    assert f"/settings/members/{member.pk}/erase-memory/" in page
    response = client.post(f"/settings/members/{member.pk}/erase-memory/", follow=True)
    assert f"kept about {member.email}" in response.content.decode()
    assert not MemoryNote.objects.filter(owner_user=member).exists()


def test_without_members_manage_the_erase_is_refused(client, builder, member, notes):
    client.force_login(builder)
    client.post(f"/settings/members/{member.pk}/erase-memory/")
    assert MemoryNote.objects.filter(owner_user=member).count() == 3


def test_an_id_past_bigint_is_a_404_not_an_error(api_client, app_admin, client, member, org):
    api_client.force_authenticate(app_admin)
    huge = 2**70
    response = api_client.get(URL.format(huge) + "?reason=x", HTTP_X_ORGANIZATION_ID=str(org.pk))
    assert response.status_code == 404
    client.force_login(member)
    assert client.post(f"/settings/memory/{huge}/delete/").status_code == 404
