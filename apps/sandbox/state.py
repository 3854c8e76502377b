"""The ``state`` backend: a workspace whose files are rows in PostgreSQL.

Files only — no shell, so ``execute`` is not offered. It implements pydantic-ai's workspace
protocol (``WorkspaceBackend`` + ``SupportsFilesystem``), the same seam pydantic-ai-backend's
``StateWorkspaceBackend`` fills with an in-memory JSON document; ours keeps one row per file
instead of one document, so two runs writing two files never rewrite each other's, and the
workspace's size is checked against ``SANDBOX_STATE_MAX_BYTES`` under a row lock on every write.
A write past the cap raises ``OSError`` naming the cap, which the console tools turn into a retry
("make it smaller or remove something"), not a crash.
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone
from pydantic_ai.workspaces import FileEntry, WorkspaceRef

from apps.capabilities.tools._blocking import run_blocking

from .models import Workspace, WorkspaceFile
from .paths import ROOT, absolute, relative

PROVIDER = "agenticos-state"


class WorkspaceFull(OSError):
    """A write that would take the workspace past ``SANDBOX_STATE_MAX_BYTES``."""


def _parents(rel: str) -> list[str]:
    parts = rel.split("/")[:-1]
    return ["/".join(parts[: i + 1]) for i in range(len(parts))]


class StateStore:
    """The synchronous row operations of one state workspace (called off the event loop)."""

    def __init__(self, workspace_id: int) -> None:
        self.workspace_id = workspace_id

    def _rows(self):
        return WorkspaceFile.objects.filter(workspace_id=self.workspace_id)

    def is_dir(self, rel: str) -> bool:
        if rel == "":
            return True
        return (
            self._rows().filter(path=rel, is_dir=True).exists()
            or self._rows().filter(path__startswith=rel + "/").exists()
        )

    def file(self, rel: str) -> WorkspaceFile | None:
        return self._rows().filter(path=rel, is_dir=False).first()

    def read(self, rel: str) -> bytes:
        row = self.file(rel)
        if row is not None:
            return bytes(row.content)
        if self.is_dir(rel):
            raise IsADirectoryError(absolute(rel))
        raise FileNotFoundError(absolute(rel))

    def write(self, rel: str, data: bytes) -> None:
        if rel == "" or self.is_dir(rel):
            raise IsADirectoryError(absolute(rel))
        cap = settings.SANDBOX_STATE_MAX_BYTES
        with transaction.atomic():
            # The workspace row is the lock: two writes to one workspace are serialised, so the
            # size they are checked against is the size they leave.
            workspace = Workspace.objects.select_for_update().get(pk=self.workspace_id)
            for parent in _parents(rel):
                if self._rows().filter(path=parent, is_dir=False).exists():
                    raise NotADirectoryError(absolute(parent))
            existing = self._rows().filter(path=rel).first()
            new_size = workspace.size_bytes - (existing.size if existing else 0) + len(data)
            if new_size > cap:
                raise WorkspaceFull(
                    f"the workspace would hold {new_size:,} bytes; this deployment caps a files-only "
                    f"workspace at {cap:,} bytes (SANDBOX_STATE_MAX_BYTES). Write less, or remove "
                    "files you no longer need."
                )
            if existing is None:
                WorkspaceFile.objects.create(
                    workspace_id=self.workspace_id, path=rel, content=data, size=len(data)
                )
            else:
                self._rows().filter(pk=existing.pk).update(
                    content=data,
                    size=len(data),
                    version=F("version") + 1,
                    modified_at=timezone.now(),
                )
            Workspace.objects.filter(pk=self.workspace_id).update(
                size_bytes=new_size, last_used_at=timezone.now()
            )

    def list_dir(self, rel: str) -> list[FileEntry]:
        if self.file(rel) is not None:
            raise NotADirectoryError(absolute(rel))
        if not self.is_dir(rel):
            raise FileNotFoundError(absolute(rel))
        prefix = rel + "/" if rel else ""
        entries: dict[str, FileEntry] = {}
        rows = self._rows().filter(path__startswith=prefix).values_list("path", "is_dir", "size")
        for path, is_dir, size in rows:
            if path == rel:
                continue
            name, _, rest = path[len(prefix) :].partition("/")
            child_is_dir = bool(rest) or is_dir
            if name in entries and entries[name].is_dir:
                continue
            entries[name] = FileEntry(
                name=name,
                path=absolute(prefix + name),
                is_dir=child_is_dir,
                size=None if child_is_dir else size,
            )
        return [entries[name] for name in sorted(entries)]

    def stat(self, rel: str) -> FileEntry:
        name = posixpath.basename(absolute(rel))
        row = self.file(rel)
        if row is not None:
            return FileEntry(name=name, path=absolute(rel), is_dir=False, size=row.size)
        if self.is_dir(rel):
            return FileEntry(name=name, path=absolute(rel), is_dir=True, size=None)
        raise FileNotFoundError(absolute(rel))

    def make_dir(self, rel: str) -> None:
        if rel == "":
            return
        if self.file(rel) is not None:
            raise FileExistsError(absolute(rel))
        WorkspaceFile.objects.get_or_create(
            workspace_id=self.workspace_id, path=rel, defaults={"is_dir": True}
        )

    def remove(self, rel: str) -> None:
        if rel == "":
            raise ValueError("refusing to remove the workspace's root")
        with transaction.atomic():
            workspace = Workspace.objects.select_for_update().get(pk=self.workspace_id)
            doomed = self._rows().filter(path=rel) | self._rows().filter(path__startswith=rel + "/")
            freed = sum(doomed.values_list("size", flat=True))
            if not doomed.exists():
                raise FileNotFoundError(absolute(rel))
            doomed.delete()
            Workspace.objects.filter(pk=workspace.pk).update(size_bytes=F("size_bytes") - freed)


class StateWorkspaceBackend:
    """pydantic-ai's workspace protocol over :class:`StateStore` (paths under ``/workspace``)."""

    def __init__(self, workspace_id: int) -> None:
        self._store = StateStore(workspace_id)
        self._ref = WorkspaceRef(provider=PROVIDER, id=str(workspace_id))

    @property
    def ref(self) -> WorkspaceRef:
        return self._ref

    async def working_dir(self) -> str:
        return ROOT

    async def read_bytes(self, path: str) -> bytes:
        return await run_blocking(self._store.read, relative(path))

    async def write_bytes(self, path: str, data: bytes) -> None:
        await run_blocking(self._store.write, relative(path), data)

    async def stat(self, path: str) -> FileEntry:
        return await run_blocking(self._store.stat, relative(path))

    async def list_dir(self, path: str) -> Sequence[FileEntry]:
        return await run_blocking(self._store.list_dir, relative(path))

    async def make_dir(self, path: str) -> None:
        await run_blocking(self._store.make_dir, relative(path))

    async def remove(self, path: str) -> None:
        await run_blocking(self._store.remove, relative(path))

    async def exists(self, path: str) -> bool:
        try:
            await self.stat(path)
        except OSError:
            return False
        return True

    async def realpath(self, path: str) -> str:
        # Rows hold no symlinks, so a path leads where it says once normalised as text.
        return posixpath.normpath(path)
