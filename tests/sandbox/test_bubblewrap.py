"""This deployment's sandbox with a real bubblewrap: each hostile command comes back as a clear
result, the worker is unharmed, and nothing it started is left running.

Each command carries a unique marker in its own text, so a leftover process (a fork bomb's
children, a child that ignores SIGTERM) is found by scanning the host's process table for it.
The wall-clock limits are short on purpose; nothing here sleeps waiting for them.
"""

import asyncio
import shutil
import tempfile
import uuid
from pathlib import Path

import pytest

from apps.sandbox import bubblewrap
from apps.sandbox.bubblewrap import BubblewrapRunner, Limits, prepare_directory

from .support import processes_mentioning

pytestmark = pytest.mark.skipif(not bubblewrap.available(), reason="bubblewrap is not installed")

LIMITS = Limits(
    timeout_seconds=2,
    cpu_seconds=30,
    memory_bytes=512 * 1024 * 1024,
    max_processes=32,
    file_bytes=20 * 1024 * 1024,
    output_bytes=100_000,
)


@pytest.fixture
def runner():
    # Under /tmp itself: the sandbox's user must be able to walk to the directory, and pytest's
    # own tmp_path sits below a directory only root may enter.
    parent = Path(tempfile.mkdtemp(prefix="agenticos-sandbox-test-"))
    parent.chmod(0o711)
    directory = parent / "workspace"
    prepare_directory(directory)
    yield BubblewrapRunner(directory, LIMITS)
    shutil.rmtree(parent)


def run(runner, command):
    marker = f"marker-{uuid.uuid4().hex}"
    outcome = asyncio.run(
        runner.run_command(["/bin/sh", "-c", f": {marker}; {command}"], run_id=marker)
    )
    return outcome, marker


def test_a_command_runs_in_the_workspace_which_is_the_only_writable_place(runner):
    outcome, _ = run(runner, "echo hello > note.txt; cat note.txt; touch /usr/x; pwd")
    assert "hello" in outcome.stdout and "/workspace" in outcome.stdout
    assert "Read-only file system" in outcome.stderr
    assert (runner.directory / "note.txt").read_text() == "hello\n"


def test_the_host_system_tree_and_network_are_not_there(runner):
    outcome, _ = run(
        runner,
        "ls /etc/passwd; "
        "python3 -c \"import socket; socket.create_connection(('1.1.1.1', 80), timeout=2)\"",
    )
    assert "No such file or directory" in outcome.stderr
    assert "Network is unreachable" in outcome.stderr
    assert outcome.exit_code != 0


def test_the_command_runs_as_an_unprivileged_user(runner):
    outcome, _ = run(runner, "id -u; cat /proc/self/status | grep CapEff")
    assert outcome.stdout.splitlines()[0] == str(bubblewrap.INSIDE_UID)
    assert "0000000000000000" in outcome.stdout


def test_more_processes_than_the_limit_cannot_be_started(runner):
    outcome, marker = run(runner, "for i in $(seq 100); do sleep 97531 & done; echo started")
    assert "Cannot fork" in outcome.stderr or "Resource temporarily unavailable" in outcome.stderr
    assert processes_mentioning(marker) == [] and processes_mentioning("sleep 97531") == []


def test_a_fork_bomb_comes_back_as_a_result_and_leaves_nothing_behind(runner):
    outcome, marker = run(runner, "f(){ f|f& }; f; wait")
    assert outcome.timed_out or outcome.exit_code is not None
    assert processes_mentioning(marker) == []


def test_an_infinite_loop_is_stopped_at_the_wall_clock_limit(runner):
    outcome, marker = run(runner, "while :; do :; done")
    assert outcome.timed_out and outcome.exit_code is None
    assert processes_mentioning(marker) == []


def test_a_gigabyte_of_output_is_cut_at_the_cap_and_the_command_stopped(runner):
    outcome, marker = run(runner, "head -c 1000000000 /dev/zero | tr '\\0' a")
    assert outcome.output_limited and not outcome.timed_out
    assert len(outcome.stdout) + len(outcome.stderr) <= LIMITS.output_bytes
    assert processes_mentioning(marker) == []


def test_a_process_ignoring_sigterm_is_killed_with_everything_it_started(runner):
    # The sleeps exec, so their own command lines carry an unusual duration instead of the marker.
    outcome, marker = run(runner, "trap '' TERM; (trap '' TERM; sleep 987654) & sleep 987653")
    assert outcome.timed_out
    assert processes_mentioning(marker) == []
    assert processes_mentioning("sleep 98765") == []


def test_a_fifty_megabyte_write_stops_at_the_file_size_limit(runner):
    outcome, marker = run(runner, "head -c 52428800 /dev/zero > big.bin; echo done")
    assert "File size limit exceeded" in outcome.stderr
    assert (runner.directory / "big.bin").stat().st_size <= LIMITS.file_bytes
    assert processes_mentioning(marker) == []


def test_a_timeout_longer_than_the_operators_limit_is_capped(runner):
    outcome = asyncio.run(
        runner.run_command(["/bin/sh", "-c", "while :; do :; done"], run_id="x", timeout=3600)
    )
    assert outcome.timed_out
