"""The ``service`` backend on this host — "This deployment's sandbox".

A workspace is a directory under ``SANDBOX_WORKSPACES_DIR`` named by its key; commands run in it
under bubblewrap (``bubblewrap.py``), where it is mounted at ``/workspace`` and is the only
writable place. The file tools read and write the directory from the worker, so every path is
checked where it really leads: a symlink a command planted (``ln -s /etc/shadow x``) resolves
outside the directory and is refused, never followed.
"""

from __future__ import annotations

import os
import posixpath
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path

from django.conf import settings
from pydantic_ai.workspaces import (
    CommandResult,
    FileEntry,
    WorkspaceOutputLimitError,
    WorkspaceRef,
    WorkspaceTimeoutError,
)

from . import bubblewrap
from .bubblewrap import BubblewrapRunner, Limits
from .paths import ROOT, OutsideWorkspace, relative

PROVIDER = "agenticos-bubblewrap"


def workspace_directory(key: str) -> Path:
    return Path(settings.SANDBOX_WORKSPACES_DIR) / key


class ServiceWorkspaceBackend:
    """pydantic-ai's workspace protocol over a host directory plus bubblewrap."""

    def __init__(self, key: str, *, limits: Limits | None = None) -> None:
        self.directory = workspace_directory(key)
        self._root: str | None = None  # the directory's real path, once created
        self.runner = BubblewrapRunner(self.directory, limits)
        self._ref = WorkspaceRef(provider=PROVIDER, id=key)
        self._commands = 0

    @property
    def ref(self) -> WorkspaceRef:
        return self._ref

    def _ensure(self) -> str:
        if self._root is None:
            bubblewrap.prepare_directory(self.directory)
            self._root = os.path.realpath(self.directory)
        return self._root

    def _host(self, path: str) -> str:
        """The host path ``path`` really names; refused when it leads outside the directory."""
        root = self._ensure()
        host = os.path.realpath(os.path.join(root, relative(path)))
        if host != root and not host.startswith(root + os.sep):
            raise OutsideWorkspace(f"{path!r} leads outside the workspace (a symlink out of it)")
        return host

    def _shown(self, host: str) -> str:
        rel = os.path.relpath(host, self._ensure())
        return ROOT if rel == "." else f"{ROOT}/{rel}"

    async def working_dir(self) -> str:
        self._ensure()
        return ROOT

    async def realpath(self, path: str) -> str:
        """Where ``path`` leads, in the sandbox's own terms; a host path when it leaves it (so the
        refusal table sees ``/etc/...`` for a link to the host's ``/etc``)."""
        root = self._ensure()
        host = os.path.realpath(os.path.join(root, relative(path)))
        if host == root or host.startswith(root + os.sep):
            return self._shown(host)
        return host

    async def read_bytes(self, path: str) -> bytes:
        host = self._host(path)
        if os.path.isdir(host):
            raise IsADirectoryError(path)
        with open(host, "rb") as handle:
            return handle.read()

    async def write_bytes(self, path: str, data: bytes) -> None:
        host = self._host(path)
        if os.path.isdir(host):
            raise IsADirectoryError(path)
        if len(data) > settings.SANDBOX_COMMAND_FILE_BYTES:
            raise OSError(
                f"the file would be {len(data):,} bytes; this sandbox caps one file at "
                f"{settings.SANDBOX_COMMAND_FILE_BYTES:,} bytes (SANDBOX_COMMAND_FILE_BYTES)"
            )
        os.makedirs(os.path.dirname(host), exist_ok=True)
        # O_NOFOLLOW: a link swapped in after the check above is refused, not written through.
        fd = os.open(host, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        if bubblewrap.runs_as_root():
            _own(Path(self._ensure()), Path(host))

    async def stat(self, path: str) -> FileEntry:
        host = self._host(path)
        if not os.path.exists(host):
            raise FileNotFoundError(path)
        is_dir = os.path.isdir(host)
        return FileEntry(
            name=posixpath.basename(self._shown(host)),
            path=self._shown(host),
            is_dir=is_dir,
            size=None if is_dir else os.path.getsize(host),
        )

    async def list_dir(self, path: str) -> Sequence[FileEntry]:
        host = self._host(path)
        entries = []
        for name in sorted(os.listdir(host)):
            child = os.path.join(host, name)
            # A link is listed by its name (names are not secret) without following it.
            is_dir = os.path.isdir(child) and not os.path.islink(child)
            size = None if is_dir or os.path.islink(child) else os.path.getsize(child)
            entries.append(FileEntry(name=name, path=self._shown(child), is_dir=is_dir, size=size))
        return entries

    async def make_dir(self, path: str) -> None:
        host = self._host(path)
        os.makedirs(host, exist_ok=True)
        if bubblewrap.runs_as_root():
            _own(Path(self._ensure()), Path(host))

    async def remove(self, path: str) -> None:
        host = self._host(path)
        if host == self._ensure():
            raise ValueError("refusing to remove the workspace's root")
        if os.path.isdir(host) and not os.path.islink(host):
            shutil.rmtree(host)
        else:
            os.unlink(host)

    async def exists(self, path: str) -> bool:
        try:
            return os.path.exists(self._host(path))
        except OSError:
            return False

    async def run(
        self,
        command,
        *,
        shell: bool = False,
        env: Mapping[str, str] | None = None,
        timeout: float | None = None,
    ) -> CommandResult:
        self._ensure()
        argv = ["/bin/sh", "-c", command] if shell else list(command)
        self._commands += 1
        outcome = await self.runner.run_command(
            argv, run_id=f"{self._ref.id}-{self._commands}", env=env, timeout=timeout
        )
        limits = self.runner.limits
        if outcome.timed_out:
            raise WorkspaceTimeoutError(
                "command timed out",
                stdout=outcome.stdout,
                stderr=outcome.stderr
                + f"\n[stopped after {min(timeout or limits.timeout_seconds, limits.timeout_seconds):g}"
                " seconds of wall-clock time, with every process it started]",
            )
        if outcome.output_limited:
            raise WorkspaceOutputLimitError(
                "output limit",
                limit=limits.output_bytes,
                stdout=outcome.stdout,
                stderr=outcome.stderr
                + f"\n[stopped: the output passed {limits.output_bytes:,} bytes; write large "
                "output to a file and read the part you need]",
            )
        return CommandResult(
            exit_code=outcome.exit_code if outcome.exit_code is not None else 1,
            stdout=outcome.stdout,
            stderr=outcome.stderr,
        )


def _own(root: Path, path: Path) -> None:
    """Hand what the worker (root) created to the sandbox's user, up to the workspace root."""
    current = path
    while True:
        os.chown(current, bubblewrap.NOBODY, bubblewrap.NOBODY, follow_symlinks=False)
        if current == root or root not in current.parents:
            return
        current = current.parent
