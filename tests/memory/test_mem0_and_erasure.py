"""memory_mem0 against a fake mem0 API on 127.0.0.1 through the real runner (remember, recall,
the scope as user_id, the key from the vault), the self-hosted rules at publish and assembly,
and erasure — of a person, of an agent — including a failing mem0."""

import pytest
from django.core.exceptions import PermissionDenied

from apps.agents.models import AgentVersion
from apps.audit.models import AuditEntry
from apps.capabilities.tools import mem0
from apps.memory.erasure import agent_memory_empty, memory_erase_person
from apps.memory.models import MemoryNote
from apps.memory.services import MemoryErasureIncomplete
from apps.vault.services import secret_create
from tests.runs.factories import published_agent

from .fake_mem0 import FakeMem0
from .support import group_chat, returns_of, run_now, slash_call

pytestmark = pytest.mark.django_db


@pytest.fixture
def fake(monkeypatch):
    with FakeMem0() as server:
        monkeypatch.setitem(mem0.ENDPOINTS, "cloud", server.base)
        yield server


@pytest.fixture
def key(org, owner):
    return secret_create(
        actor=owner, organization=org, name="mem0", purpose="capability", value="m0-key"
    )


@pytest.fixture
def agent(org, owner, key):
    return published_agent(
        org,
        created_by=owner,
        capabilities=[{"id": "memory_mem0", "secret_id": key.pk}, {"id": "memory_files"}],
    )


def test_remember_and_recall_in_a_one_to_one_chat(org, member, agent, fake):
    stored = run_now(
        member, org, agent, slash_call("remember", text="Ana prefers invoices in EUR.")
    )
    assert stored.status == "completed"
    assert returns_of(stored)[-1] == "Remembered: Ana prefers invoices in EUR."
    user_id = f"{org.pk}:{agent.pk}:user-{member.pk}"
    assert fake.memories == {user_id: ["Ana prefers invoices in EUR."]}
    method, path, body, headers = fake.requests[0]
    assert headers["Authorization"] == "Token m0-key"  # the key from the vault
    recalled = run_now(member, org, agent, slash_call("recall", query="invoices currency"))
    assert "- Ana prefers invoices in EUR." in returns_of(recalled)[-1]


def test_another_person_recalls_nothing_of_it(org, member, builder, agent, fake):
    run_now(member, org, agent, slash_call("remember", text="Ana prefers invoices in EUR."))
    theirs = run_now(builder, org, agent, slash_call("recall", query="invoices"))
    assert "No stored memory matches 'invoices'" in returns_of(theirs)[-1]


def test_a_group_chat_is_its_own_mem0_space(org, member, agent, fake):
    room = group_chat(org, agent, member)
    run_now(
        member,
        org,
        agent,
        slash_call("remember", text="Standup is at nine."),
        surface="slack",
        conversation=room,
    )
    assert f"{org.pk}:{agent.pk}:chat-slack:T042:C0815" in fake.memories


def test_no_store_means_mem0_is_not_called(org, member, agent, fake):
    run = run_now(member, org, agent, slash_call("remember", text="x y z"), surface="widget")
    assert "Memory is not available here" in returns_of(run)[-1]
    assert fake.requests == []


def test_a_failing_mem0_is_a_retry_and_the_run_carries_on(org, member, agent, fake):
    fake.failing = "all"
    run = run_now(member, org, agent, slash_call("recall", query="anything"))
    assert run.status == "completed"
    assert "mem0 answered HTTP 500; try again in a moment" in returns_of(run)[-1]


def test_self_hosted_is_refused_with_an_empty_allow_list(org, owner, key, settings):
    settings.MEM0_ALLOWED_HOSTS = []
    from apps.agents.validation import validate_spec

    spec = {
        "capabilities": [
            {"id": "memory_mem0", "secret_id": key.pk, "config": {"base_url": "https://m.example"}}
        ]
    }
    (error,) = validate_spec(spec, organization=org, actor=owner)
    assert (error.binding, error.field) == ("memory_mem0", "config.base_url")
    assert "MEM0_ALLOWED_HOSTS is empty" in error.message


def test_self_hosted_must_be_https_and_allowed(org, owner, key, settings, monkeypatch):
    from apps.agents.validation import validate_spec
    from tests.capabilities.web.netguard import LoopbackOnlyNetwork

    # Two lists: MEM0_ALLOWED_HOSTS (who may receive the key) and OUTBOUND_ALLOW (which private
    # address the deployment may dial).
    LoopbackOnlyNetwork().install(monkeypatch).answer("mem0.internal.example", "10.0.0.9")
    settings.MEM0_ALLOWED_HOSTS = ["mem0.internal.example"]
    settings.OUTBOUND_ALLOW = ["mem0.internal.example"]

    def errors(url):
        spec = {
            "capabilities": [
                {"id": "memory_mem0", "secret_id": key.pk, "config": {"base_url": url}}
            ]
        }
        return [e.message for e in validate_spec(spec, organization=org, actor=owner)]

    assert errors("https://mem0.internal.example") == []
    assert any(
        "not in the deployment's MEM0_ALLOWED_HOSTS" in m for m in errors("https://evil.example")
    )
    assert any("https" in m for m in errors("http://mem0.internal.example"))
    settings.OUTBOUND_ALLOW = []
    assert any("private" in m for m in errors("https://mem0.internal.example"))


def test_a_host_removed_from_the_allow_list_is_refused_at_assembly(
    org, member, owner, key, settings
):
    settings.MEM0_ALLOWED_HOSTS = ["mem0.internal.example"]
    agent = published_agent(
        org,
        created_by=owner,
        capabilities=[
            {
                "id": "memory_mem0",
                "secret_id": key.pk,
                "config": {"base_url": "https://mem0.internal.example"},
            }
        ],
    )
    settings.MEM0_ALLOWED_HOSTS = []
    run = run_now(member, org, agent, slash_call("recall", query="x"))
    assert run.status == "failed" and "MEM0_ALLOWED_HOSTS" in run.error


# --- erasure --------------------------------------------------------------------------------------


def _note(org, agent, person, name="preferences.md", body="Polish"):
    return MemoryNote.objects.create(
        organization=org, agent=agent, owner_user=person, name=name, body=body
    )


def test_a_person_erases_everything_kept_about_them_here_and_in_mem0(
    org, member, builder, agent, fake
):
    run_now(member, org, agent, slash_call("remember", text="Ana prefers EUR."))
    run_now(builder, org, agent, slash_call("remember", text="Builder likes tea."))
    _note(org, agent, member)
    _note(org, agent, builder)
    erased = memory_erase_person(actor=member, organization=org, person=member)
    assert erased == {"notes": 1, "mem0_spaces": 1}
    assert not MemoryNote.objects.filter(owner_user=member).exists()
    assert MemoryNote.objects.filter(owner_user=builder).exists()
    assert list(fake.memories) == [f"{org.pk}:{agent.pk}:user-{builder.pk}"]
    entry = AuditEntry.objects.get(action="memory.person_erased")
    assert entry.details == {"notes": 1, "mem0_spaces": 1, "failures": []}


def test_erasure_reaches_every_retained_versions_mem0_endpoint(
    org, member, owner, agent, fake, settings, key
):
    settings.MEM0_ALLOWED_HOSTS = ["mem0.old.example"]
    # Version 2 moved to a self-hosted endpoint; version 1's cloud space must still be erased.
    AgentVersion.objects.create(
        agent=agent,
        number=2,
        spec={
            "capabilities": [
                {
                    "id": "memory_mem0",
                    "secret_id": key.pk,
                    "config": {"base_url": "https://mem0.old.example"},
                }
            ]
        },
    )
    run_now(member, org, agent, slash_call("remember", text="Ana prefers EUR."))
    with pytest.raises(MemoryErasureIncomplete) as incomplete:
        memory_erase_person(actor=member, organization=org, person=member)
    # The cloud space (the fake) was erased; the old self-hosted one is unreachable here.
    assert fake.memories == {}
    assert "https://mem0.old.example" in str(incomplete.value)
    assert "repeat the erasure" in str(incomplete.value)


def test_a_failing_mem0_makes_the_erasure_an_error_that_can_be_repeated(org, member, agent, fake):
    run_now(member, org, agent, slash_call("remember", text="Ana prefers EUR."))
    _note(org, agent, member)
    fake.failing = "all"
    with pytest.raises(MemoryErasureIncomplete) as incomplete:
        memory_erase_person(actor=member, organization=org, person=member)
    assert "mem0 answered HTTP 500" in str(incomplete.value)
    assert not MemoryNote.objects.filter(owner_user=member).exists()  # the rows here are gone
    assert fake.memories  # …mem0's are not
    fake.failing = None
    assert memory_erase_person(actor=member, organization=org, person=member)["mem0_spaces"] == 1
    assert fake.memories == {}


def test_missing_credentials_make_the_erasure_an_error(org, member, agent, fake, key):
    run_now(member, org, agent, slash_call("remember", text="Ana prefers EUR."))
    key.delete()
    with pytest.raises(MemoryErasureIncomplete) as incomplete:
        memory_erase_person(actor=member, organization=org, person=member)
    assert "API key is missing from the vault" in str(incomplete.value)


def test_members_manage_erases_another_person_and_others_may_not(
    org, admin, member, builder, agent, fake
):
    _note(org, agent, member)
    with pytest.raises(PermissionDenied):
        memory_erase_person(actor=builder, organization=org, person=member)
    assert memory_erase_person(actor=admin, organization=org, person=member)["notes"] == 1


def test_emptying_an_agent_removes_every_owners_notes_and_mem0_spaces(
    org, owner, member, builder, agent, fake
):
    other = published_agent(
        org, name="Other", created_by=owner, capabilities=[{"id": "memory_files"}]
    )
    run_now(member, org, agent, slash_call("remember", text="Ana prefers EUR."))
    run_now(builder, org, agent, slash_call("remember", text="Builder likes tea."))
    fake.memories["999:1:user-1"] = ["another organization's space"]
    _note(org, agent, member)
    MemoryNote.objects.create(organization=org, agent=agent, chat_key="slack:x", name="t.md")
    kept = _note(org, other, member)
    emptied = agent_memory_empty(actor=owner, agent=agent)
    assert emptied == {"notes": 2, "mem0_spaces": 2}
    assert list(MemoryNote.objects.all()) == [kept]
    assert list(fake.memories) == ["999:1:user-1"]


def test_emptying_an_agent_whose_mem0_listing_fails_is_an_error(org, owner, member, agent, fake):
    run_now(member, org, agent, slash_call("remember", text="Ana prefers EUR."))
    fake.failing = "entities"
    with pytest.raises(MemoryErasureIncomplete):
        agent_memory_empty(actor=owner, agent=agent)


def test_emptying_an_agent_needs_edit_on_it(org, member, agent):
    with pytest.raises(PermissionDenied):
        agent_memory_empty(actor=member, agent=agent)
