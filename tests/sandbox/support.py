"""Shared by the sandbox tests: runs through the real runner on the offline model, and a
scan of the host's processes for anything a sandboxed command left running."""

from __future__ import annotations

import os

from tests.memory.support import returns_of, run_now, slash_call  # noqa: F401  (re-exported)

SANDBOX = "sandbox"


def sandbox_binding(**config) -> list[dict]:
    return [{"id": SANDBOX, "config": config}]


def processes_mentioning(marker: str) -> list[int]:
    """Pids whose command line carries ``marker`` (a token written into the command itself)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                if marker.encode() in handle.read():
                    found.append(int(entry))
        except OSError:
            continue
    return found
