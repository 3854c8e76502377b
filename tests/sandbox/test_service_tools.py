"""The sandbox tools on this deployment's sandbox (a host directory plus a real bubblewrap),
driven through a real pydantic-ai Agent: a shell that works, the refusals, a symlink that tries
to lead out of the workspace, and a write past the file-size limit."""

import shutil
import tempfile
from pathlib import Path

import pytest

from apps.sandbox import bubblewrap
from apps.sandbox.service import ServiceWorkspaceBackend
from apps.sandbox.services import OpenWorkspace
from apps.sandbox.toolset import build_sandbox_toolset
from tests.capabilities.tools.helpers import call, run_agent, tool_returns, toolset_context

pytestmark = pytest.mark.skipif(not bubblewrap.available(), reason="bubblewrap is not installed")


@pytest.fixture
def workspaces(settings):
    parent = Path(tempfile.mkdtemp(prefix="agenticos-sandbox-test-"))
    parent.chmod(0o711)
    settings.SANDBOX_WORKSPACES_DIR = parent
    settings.SANDBOX_COMMAND_TIMEOUT_SECONDS = 5
    yield parent
    shutil.rmtree(parent)


def tools(include_execute=True):
    backend = ServiceWorkspaceBackend("k" * 64)
    opened = OpenWorkspace(
        workspace_id=None,
        backend=backend,
        backend_name="service",
        scope="conversation",
        owner_label="conversation 1",
        run_id=1,
        include_execute=include_execute,
    )
    return backend, build_sandbox_toolset(
        {"id": "sandbox", "config": {"backend": "service", "include_execute": include_execute}},
        toolset_context(sandbox=opened),
    )


def results(*steps, include_execute=True):
    backend, toolset = tools(include_execute)
    # One call per model response, so they run in order.
    result, _ = run_agent([toolset], list(steps))
    return backend, [str(p.content) for p in tool_returns(result.all_messages())]


def test_a_file_written_by_the_tools_is_there_for_the_shell_and_back(workspaces):
    backend, (wrote, ran, read) = results(
        call("write_file", path="data.csv", content="a,b\n1,2\n"),
        call("execute", command="wc -l < data.csv > count.txt && cat count.txt"),
        call("read_file", path="count.txt"),
    )
    assert wrote.startswith("Wrote")
    assert ran.strip() == "2"
    assert "2" in read


def test_a_command_naming_a_credential_path_is_refused(workspaces):
    _, (ran,) = results(call("execute", command="cat .ssh/id_rsa"))
    assert "Permission denied" in ran


def test_a_symlink_planted_by_a_command_cannot_lead_a_read_out_of_the_workspace(workspaces):
    _, (linked, read, read_host) = results(
        # Spelled so the command check cannot see the path: only where the link leads tells.
        call("execute", command="ln -s /$(printf etc)/hostname host && ln -s ../../ up && echo ok"),
        call("read_file", path="host"),
        call("read_file", path="up/agenticos-secret"),
    )
    assert "ok" in linked
    # The link's target is the host's /etc: the refusal table's system tree.
    assert "Permission denied" in read
    assert "outside the workspace" in read_host or "Permission denied" in read_host


def test_a_fifty_megabyte_write_is_refused_naming_the_limit(workspaces):
    backend, (wrote,) = results(call("write_file", path="big.bin", content="x" * 50 * 1024 * 1024))
    assert "SANDBOX_COMMAND_FILE_BYTES" in wrote
    assert not (backend.directory / "big.bin").exists()


def test_without_include_execute_there_is_no_shell_at_all(workspaces):
    _, toolset = tools(include_execute=False)
    assert "execute" not in toolset.tools
