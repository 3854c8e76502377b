"""One command under bubblewrap, with limits: this deployment's command runner.

It fills pydantic-ai-backend's command-runner seam (``CommandRunner.run_command`` /
``stop_command``, answering a ``CommandOutcome``) on a Linux host with no Docker. Per command:

- a fresh mount, PID, IPC, UTS, user and network namespace (``--unshare-all``): no network, no
  view of the host's processes, and ``/usr`` the only part of the host visible (read-only);
- the workspace directory is the only writable bind (plus a private ``/tmp``);
- limits set with ``prlimit`` before bubblewrap starts, inherited by everything inside: CPU
  seconds, address space, processes, the size of one file, open files;
- run as an unprivileged user: when the worker is root it drops to ``nobody`` first (so the
  process limit is enforced — the kernel does not apply it to root);
- a wall-clock timeout and an output cap, either of which kills the whole process group. The
  command is PID 1's child in its own PID namespace, so killing bubblewrap takes everything the
  command started with it, including a process that ignores SIGTERM (we send SIGKILL).

What it does not isolate is in docs/sandbox.md: every command shares the host's kernel.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from pydantic_ai_backends.types import CommandOutcome

NOBODY = 65534
# The uid/gid a command sees inside its user namespace.
INSIDE_UID = 1000
PATH = "/usr/local/bin:/usr/bin:/bin"
CHUNK = 64 * 1024


class BubblewrapUnavailable(RuntimeError):
    """bubblewrap (or prlimit) is not installed on this host."""


@dataclass(frozen=True)
class Limits:
    """What one command may use; the defaults come from the SANDBOX_COMMAND_* settings."""

    timeout_seconds: float
    cpu_seconds: int
    memory_bytes: int
    max_processes: int
    file_bytes: int
    output_bytes: int
    open_files: int = 256

    @classmethod
    def from_settings(cls) -> Limits:
        return cls(
            timeout_seconds=settings.SANDBOX_COMMAND_TIMEOUT_SECONDS,
            cpu_seconds=settings.SANDBOX_COMMAND_CPU_SECONDS,
            memory_bytes=settings.SANDBOX_COMMAND_MEMORY_BYTES,
            max_processes=settings.SANDBOX_COMMAND_MAX_PROCESSES,
            file_bytes=settings.SANDBOX_COMMAND_FILE_BYTES,
            output_bytes=settings.SANDBOX_COMMAND_OUTPUT_BYTES,
        )


def bubblewrap_path() -> str | None:
    return shutil.which("bwrap")


def available() -> bool:
    return bubblewrap_path() is not None and shutil.which("prlimit") is not None


def runs_as_root() -> bool:
    return os.geteuid() == 0


def prepare_directory(directory: Path) -> None:
    """Create a workspace directory the command's user can write."""
    directory.mkdir(parents=True, exist_ok=True)
    if runs_as_root():
        os.chown(directory, NOBODY, NOBODY)
    directory.chmod(0o700)


def command_argv(argv: Sequence[str], *, directory_fd: int, limits: Limits) -> list[str]:
    """The full host command line: [drop to nobody] prlimit … -- bwrap … -- argv.

    The workspace is bound from an open descriptor (``--bind-fd``), not a path: the unprivileged
    user need not be able to walk to the directory, and a directory swapped for a link between
    the check and the mount is not what gets mounted.
    """
    bwrap, prlimit = bubblewrap_path(), shutil.which("prlimit")
    if bwrap is None or prlimit is None:
        raise BubblewrapUnavailable(
            "this host has no bubblewrap (apt-get install -y bubblewrap), so the deployment's "
            "sandbox cannot run commands"
        )
    prefix: list[str] = []
    if runs_as_root():
        prefix = [
            shutil.which("setpriv") or "setpriv",
            f"--reuid={NOBODY}",
            f"--regid={NOBODY}",
            "--clear-groups",
        ]
    limited = [
        prlimit,
        f"--cpu={limits.cpu_seconds}",
        f"--as={limits.memory_bytes}",
        f"--nproc={limits.max_processes}",
        f"--fsize={limits.file_bytes}",
        f"--nofile={limits.open_files}",
        "--core=0",
        "--",
    ]
    sandbox = [
        bwrap,
        "--unshare-all",
        "--die-with-parent",
        "--new-session",
        "--cap-drop",
        "ALL",
        "--ro-bind",
        "/usr",
        "/usr",
        "--symlink",
        "usr/bin",
        "/bin",
        "--symlink",
        "usr/sbin",
        "/sbin",
        "--symlink",
        "usr/lib",
        "/lib",
    ]
    if Path("/usr/lib64").is_dir():
        sandbox += ["--symlink", "usr/lib64", "/lib64"]
    sandbox += [
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--tmpfs",
        "/tmp",
        "--bind-fd",
        str(directory_fd),
        "/workspace",
        "--chdir",
        "/workspace",
        "--uid",
        str(INSIDE_UID),
        "--gid",
        str(INSIDE_UID),
        "--clearenv",
        "--setenv",
        "PATH",
        PATH,
        "--setenv",
        "HOME",
        "/workspace",
        "--setenv",
        "TMPDIR",
        "/tmp",
        "--setenv",
        "LANG",
        "C.UTF-8",
        "--",
    ]
    return [*prefix, *limited, *sandbox, *argv]


class BubblewrapRunner:
    """pydantic-ai-backend's ``CommandRunner`` for one workspace directory on this host."""

    def __init__(self, directory: Path, limits: Limits | None = None) -> None:
        self.directory = directory
        self.limits = limits or Limits.from_settings()
        self._running: dict[str, asyncio.subprocess.Process] = {}

    async def run_command(
        self,
        argv: Sequence[str],
        *,
        run_id: str,
        env: Mapping[str, str] | None = None,
        timeout: float | None = None,
        output_limit: int | None = None,
    ) -> CommandOutcome:
        """Run ``argv`` in the sandbox with stdin at EOF; never raises for the command's faults.

        ``timeout`` is capped by the operator's limit: a model asking for an hour gets the
        deployment's ceiling.
        """
        limits = self.limits
        wall = min(timeout or limits.timeout_seconds, limits.timeout_seconds)
        cap = min(output_limit or limits.output_bytes, limits.output_bytes)
        directory_fd = os.open(self.directory, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        try:
            return await self._run(argv, run_id, env, wall, cap, directory_fd)
        finally:
            os.close(directory_fd)

    async def _run(self, argv, run_id, env, wall, cap, directory_fd) -> CommandOutcome:
        full = command_argv(argv, directory_fd=directory_fd, limits=self.limits)
        extra: list[str] = []
        for name, value in (env or {}).items():
            extra += ["--setenv", name, value]
        if extra:
            at = full.index("--clearenv") + 1
            full[at:at] = extra
        process = await asyncio.create_subprocess_exec(
            *full,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            # Its own process group: the timeout and the output cap kill the group, not the worker.
            start_new_session=True,
            pass_fds=(directory_fd,),
        )
        self._running[run_id] = process
        out, err = bytearray(), bytearray()
        over = asyncio.Event()

        async def drain(stream: asyncio.StreamReader, sink: bytearray) -> None:
            # Read to the end even past the cap (discarding): asyncio only reports the process
            # as finished once its pipes close, and a pipe nobody reads never does.
            while chunk := await stream.read(CHUNK):
                room = cap - (len(out) + len(err))
                if room > 0:
                    sink += chunk[:room]
                if len(chunk) > room:
                    over.set()

        # Both pipes exist: the process was started with stdout and stderr piped.
        assert process.stdout is not None and process.stderr is not None
        readers = asyncio.gather(drain(process.stdout, out), drain(process.stderr, err))
        limited: asyncio.Future = asyncio.ensure_future(over.wait())
        timed_out = False
        try:
            done, _ = await asyncio.wait(
                {readers, limited}, timeout=wall, return_when=asyncio.FIRST_COMPLETED
            )
            if not done:
                timed_out = True
            if timed_out or over.is_set():
                _kill_group(process)
            else:
                await process.wait()
        finally:
            limited.cancel()
            if process.returncode is None:
                _kill_group(process)
            # The group is dead, so both pipes reach their end and the readers return.
            await asyncio.gather(readers, return_exceptions=True)
            await process.wait()
            self._running.pop(run_id, None)
        return CommandOutcome(
            stdout=out.decode("utf-8", errors="replace"),
            stderr=err.decode("utf-8", errors="replace"),
            exit_code=None if (timed_out or over.is_set()) else process.returncode,
            timed_out=timed_out,
            output_limited=over.is_set(),
        )

    async def stop_command(self, run_id: str) -> None:
        process = self._running.get(run_id)
        if process is not None and process.returncode is None:
            _kill_group(process)


def _kill_group(process: asyncio.subprocess.Process) -> None:
    """SIGKILL bubblewrap's process group; its PID namespace takes every descendant with it."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
