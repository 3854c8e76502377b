"""The refusal table, whatever the approval policy: through the real runner on the offline model
(state backend), and the files-only workspace's size cap."""

import pytest

from apps.runs.models import Conversation
from apps.sandbox.models import WorkspaceFile, WorkspaceOperation
from tests.runs.factories import published_agent

from .support import returns_of, run_now, sandbox_binding, slash_call

pytestmark = pytest.mark.django_db


@pytest.fixture
def agent(org, member):
    return published_agent(org, created_by=member, capabilities=sandbox_binding())


def turn(member, org, agent, *calls, conversation=None):
    """One turn of ``/call`` lines; the tool results in order."""
    text = "\n".join(slash_call(name, **args) for name, args in calls)
    run = run_now(member, org, agent, text, conversation=conversation)
    assert run.status == "completed", run.error
    returns = returns_of(run)
    return run, returns[len(returns) - len(calls) :]


@pytest.mark.parametrize(
    "path",
    [
        ".env",
        "app/.env",
        "certs/server.pem",
        "deploy.key",
        "credentials.json",
        ".ssh/id_ed25519",
        ".aws/config",
        "/etc/passwd",
        "/usr/bin/python3",
        "/proc/self/environ",
    ],
)
def test_credentials_and_the_system_tree_cannot_be_written_or_read(org, member, agent, path):
    _, (wrote, read) = turn(
        member,
        org,
        agent,
        ("write_file", {"path": path, "content": "AKIA-not-a-real-key"}),
        ("read_file", {"path": path}),
    )
    assert "Permission denied" in wrote and "Permission denied" in read
    assert not WorkspaceFile.objects.filter(content__contains=b"AKIA").exists()
    assert WorkspaceOperation.objects.filter(outcome="refused").count() == 2


@pytest.mark.parametrize(
    "path, says",
    [("../outside.txt", "contains '..'"), ("notes/../../x", "contains '..'"), ("a\x00b", "NUL")],
)
def test_dot_dot_and_nul_bytes_are_refused_before_anything_resolves(org, member, agent, path, says):
    _, (wrote,) = turn(member, org, agent, ("write_file", {"path": path, "content": "x"}))
    assert wrote.startswith("Permission denied") and says in wrote
    assert WorkspaceOperation.objects.get().outcome == "refused"
    assert not WorkspaceFile.objects.exists()


def test_an_absolute_path_outside_the_workspace_is_refused(org, member, agent):
    _, (wrote,) = turn(member, org, agent, ("write_file", {"path": "/tmp/x.txt", "content": "x"}))
    assert "outside the workspace" in wrote
    assert not WorkspaceFile.objects.exists()


def test_grep_drops_matches_inside_a_refused_file_and_ls_still_lists_its_name(org, member, agent):
    first, _ = turn(member, org, agent, ("write_file", {"path": "notes.md", "content": "token: x"}))
    conversation = Conversation.objects.get(pk=first.conversation_id)
    # A credential file that got into the workspace some other way (an upload, a command).
    workspace = WorkspaceFile.objects.get().workspace
    WorkspaceFile.objects.create(workspace=workspace, path=".env", content=b"token: hunter2")
    _, (found, listed) = turn(
        member,
        org,
        agent,
        ("grep", {"pattern": "token", "output_mode": "content", "ignore_hidden": False}),
        ("ls", {"path": "."}),
        conversation=conversation,
    )
    assert "notes.md" in found and "hunter2" not in found and ".env" not in found
    assert ".env" in listed and "notes.md" in listed


def test_a_write_past_the_cap_is_a_retry_naming_the_cap(org, member, agent, settings):
    settings.SANDBOX_STATE_MAX_BYTES = 100
    _, (small, big) = turn(
        member,
        org,
        agent,
        ("write_file", {"path": "a.txt", "content": "x" * 60}),
        ("write_file", {"path": "b.txt", "content": "y" * 60}),
    )
    assert small.startswith("Wrote")
    assert "SANDBOX_STATE_MAX_BYTES" in big and "100 bytes" in big
    assert list(WorkspaceFile.objects.values_list("path", flat=True)) == ["a.txt"]
    assert WorkspaceFile.objects.get().workspace.size_bytes == 60
