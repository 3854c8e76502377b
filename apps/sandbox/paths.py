"""Where the model's paths land: every workspace is rooted at ``/workspace``.

Both backends show the model the same tree, so a spec that moves from ``state`` to ``service``
keeps its instructions. A path that resolves outside the root is refused here, whichever backend
serves it; the system tree gets the refusal table's own message first (``refusals.py``).
"""

from __future__ import annotations

import posixpath

ROOT = "/workspace"


class OutsideWorkspace(PermissionError):
    """A path that resolves outside the workspace root."""


def relative(path: str) -> str:
    """``path`` (absolute, already normalised by the workspace) relative to the root; ``""`` is
    the root itself."""
    if "\x00" in path:
        raise OutsideWorkspace("a path cannot contain a NUL byte")
    normal = posixpath.normpath(path)
    if normal == ROOT:
        return ""
    if not normal.startswith(ROOT + "/"):
        raise OutsideWorkspace(f"{path!r} is outside the workspace ({ROOT})")
    return normal[len(ROOT) + 1 :]


def absolute(rel: str) -> str:
    return ROOT if not rel else f"{ROOT}/{rel}"
