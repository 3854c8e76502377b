"""A workspace survives between turns, through the real runner on the offline model
(``/call write_file {...}`` then ``/call read_file {...}``), and the scope decides who shares it."""

import pytest

from apps.audit.models import AuditEntry
from apps.runs.models import Conversation
from apps.sandbox.models import Workspace, WorkspaceFile, WorkspaceOperation
from tests.runs.factories import published_agent

from .support import returns_of, run_now, sandbox_binding, slash_call

pytestmark = pytest.mark.django_db


def write(path, content):
    return slash_call("write_file", path=path, content=content)


def read(path):
    return slash_call("read_file", path=path)


def test_a_file_written_in_turn_one_is_read_in_turn_two_of_the_conversation(org, member):
    agent = published_agent(org, created_by=member, capabilities=sandbox_binding())
    first = run_now(member, org, agent, write("notes.md", "Buy oat milk."))
    assert first.status == "completed", first.error
    assert "Wrote 1 lines to" in returns_of(first)[-1]
    conversation = Conversation.objects.get(pk=first.conversation_id)
    second = run_now(member, org, agent, read("notes.md"), conversation=conversation)
    assert second.status == "completed"
    assert "Buy oat milk." in returns_of(second)[-1]
    stored = WorkspaceFile.objects.get(path="notes.md")
    assert bytes(stored.content) == b"Buy oat milk."
    assert stored.workspace.conversation_id == conversation.pk
    # Opening the workspace was audited once, with the person as the actor; reusing it was not.
    opened = AuditEntry.objects.get(action="sandbox.workspace_opened")
    assert opened.actor_id == member.pk and opened.details["scope"] == "conversation"


def test_a_new_conversation_starts_with_an_empty_workspace(org, member):
    agent = published_agent(org, created_by=member, capabilities=sandbox_binding())
    run_now(member, org, agent, write("notes.md", "Buy oat milk."))
    other = run_now(member, org, agent, read("notes.md"))
    assert "not found" in returns_of(other)[-1]
    assert "oat milk" not in returns_of(other)[-1]


def test_user_scope_follows_the_person_and_two_people_never_see_each_others_files(
    org, member, builder
):
    agent = published_agent(
        org, created_by=builder, capabilities=sandbox_binding(session_scope="user")
    )
    run_now(member, org, agent, write("diary.md", "Member's private note."))
    # The same person in a new conversation finds it…
    again = run_now(member, org, agent, read("diary.md"))
    assert "Member's private note." in returns_of(again)[-1]
    # …another person, on the same agent, does not.
    theirs = run_now(builder, org, agent, read("diary.md"))
    assert "not found" in returns_of(theirs)[-1]
    assert "private" not in theirs.output
    listing = run_now(builder, org, agent, slash_call("ls", path="."))
    assert "diary.md" not in returns_of(listing)[-1]
    assert Workspace.objects.filter(scope="user").count() == 2


def test_run_scope_gives_every_turn_a_new_workspace(org, member):
    agent = published_agent(
        org, created_by=member, capabilities=sandbox_binding(session_scope="run")
    )
    first = run_now(member, org, agent, write("scratch.txt", "temporary"))
    conversation = Conversation.objects.get(pk=first.conversation_id)
    second = run_now(member, org, agent, read("scratch.txt"), conversation=conversation)
    assert "not found" in returns_of(second)[-1]


def test_agent_scope_is_shared_by_everyone_who_talks_to_the_agent(org, member, builder):
    agent = published_agent(
        org, created_by=builder, capabilities=sandbox_binding(session_scope="agent")
    )
    run_now(member, org, agent, write("team.md", "Standup at 9."))
    theirs = run_now(builder, org, agent, read("team.md"))
    assert "Standup at 9." in returns_of(theirs)[-1]
    assert Workspace.objects.get().owner_label == "everyone who talks to this agent"


def test_channel_scope_outside_a_channel_refuses_rather_than_widening(org, member):
    agent = published_agent(
        org, created_by=member, capabilities=sandbox_binding(session_scope="channel")
    )
    run = run_now(member, org, agent, write("notes.md", "x"))
    assert run.status == "completed"
    assert "shared per chat channel, and this run did not arrive in one" in returns_of(run)[-1]
    assert not Workspace.objects.exists()


def test_the_operation_log_names_path_operation_and_run_never_content(org, member):
    agent = published_agent(org, created_by=member, capabilities=sandbox_binding())
    run = run_now(member, org, agent, write("notes.md", "secret-ish body"))
    logged = WorkspaceOperation.objects.get()
    assert (logged.operation, logged.path, logged.run_id, logged.outcome) == (
        "write_file",
        "notes.md",
        run.pk,
        "done",
    )
    assert "secret-ish" not in str(WorkspaceOperation.objects.values().get())


def test_the_workspace_is_deleted_with_its_conversation(org, member):
    agent = published_agent(org, created_by=member, capabilities=sandbox_binding())
    run = run_now(member, org, agent, write("notes.md", "x"))
    Conversation.objects.filter(pk=run.conversation_id).delete()
    assert not Workspace.objects.exists() and not WorkspaceFile.objects.exists()


def test_the_state_backend_offers_no_shell(org, member):
    agent = published_agent(org, created_by=member, capabilities=sandbox_binding())
    run = run_now(member, org, agent, slash_call("execute", command="echo hi"))
    # The offline model only calls tools it is offered: nothing ran, nothing was logged.
    assert run.status == "completed"
    assert returns_of(run) == []
    assert not WorkspaceOperation.objects.exists()
