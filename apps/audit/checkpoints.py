"""Terminal checkpoints: a chain's head (hash, length, time), signed, kept outside the database.

Seed 003 admits two deletions the chain cannot see by itself — trimming a chain's newest entries
and deleting an organization's whole chain — because what remains is internally consistent.
A checkpoint written where the database operator does not reach closes both: `audit-verify`
reports a chain shorter than its checkpoint, a head that no longer matches it, and a
checkpoint whose chain has vanished.

One JSON file per chain in settings.AUDIT_CHECKPOINT_DIR (``org-<id>.json``,
``deployment.json``), HMAC-SHA256 signed with settings.AUDIT_CHECKPOINT_KEY over its canonical
content (the chain name included, so a file cannot be renamed onto another chain). Files are
replaced atomically, never moved backwards (a shorter head is not written over a longer one),
under an exclusive lock so the hourly task and an `audit-verify` run cannot interleave.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import hmac
import json
import os
import re
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path

from django.conf import settings

from .models import DEPLOYMENT_CHAIN

FORMAT_VERSION = 1
_ORG_FILE = re.compile(r"^org-(\d+)\.json$")


@dataclass(frozen=True)
class Checkpoint:
    chain: str
    length: int
    head_hash: str
    head_entry_id: int | None
    written_at: str  # ISO 8601, UTC

    def content(self) -> bytes:
        payload = {"version": FORMAT_VERSION, **asdict(self)}
        return json.dumps(payload, sort_keys=True, separators=(",", ":")).encode()


class CheckpointInvalid(Exception):
    """A checkpoint file exists but cannot be trusted (unreadable or badly signed)."""


def _key() -> bytes:
    key = settings.AUDIT_CHECKPOINT_KEY
    if not key:
        raise RuntimeError("AUDIT_CHECKPOINT_KEY is empty; audit checkpoints cannot be signed")
    return key.encode()


def sign(checkpoint: Checkpoint) -> str:
    return hmac.new(_key(), checkpoint.content(), hashlib.sha256).hexdigest()


def directory() -> Path:
    return Path(settings.AUDIT_CHECKPOINT_DIR)


def filename(chain: str) -> str:
    if chain == DEPLOYMENT_CHAIN:
        return "deployment.json"
    prefix, _, org_id = chain.partition(":")
    if prefix != "org" or not org_id.isdigit():
        raise ValueError(f"not a chain name: {chain!r}")
    return f"org-{org_id}.json"


def chain_of_file(name: str) -> str | None:
    if name == "deployment.json":
        return DEPLOYMENT_CHAIN
    match = _ORG_FILE.match(name)
    return f"org:{match.group(1)}" if match else None


def read(chain: str) -> Checkpoint | None:
    """The chain's checkpoint; None if there is no file; CheckpointInvalid if it is not genuine."""
    path = directory() / filename(chain)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    try:
        document = json.loads(raw)
        signature = document.pop("signature")
        if document.pop("version") != FORMAT_VERSION:
            raise CheckpointInvalid(f"{path.name}: unknown checkpoint format")
        checkpoint = Checkpoint(
            chain=str(document["chain"]),
            length=int(document["length"]),
            head_hash=str(document["head_hash"]),
            head_entry_id=document["head_entry_id"],
            written_at=str(document["written_at"]),
        )
    except (ValueError, KeyError, TypeError) as error:
        raise CheckpointInvalid(f"{path.name}: unreadable checkpoint ({error})") from None
    if not hmac.compare_digest(str(signature), sign(checkpoint)):
        raise CheckpointInvalid(
            f"{path.name}: signature does not match (edited, or signed with another key)"
        )
    if checkpoint.chain != chain:
        raise CheckpointInvalid(
            f"{path.name}: signed for chain {checkpoint.chain!r}, not {chain!r}"
        )
    return checkpoint


def chains_on_disk() -> list[str]:
    try:
        names = os.listdir(directory())
    except FileNotFoundError:
        return []
    return sorted(chain for chain in map(chain_of_file, names) if chain is not None)


@contextlib.contextmanager
def locked():
    """Hold the directory's exclusive lock (one checkpoint writer at a time on this host)."""
    folder = directory()
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / ".lock", "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def write(checkpoint: Checkpoint) -> bool:
    """Replace the chain's checkpoint; False (nothing written) if it would move it backwards.

    Call under `locked()`. The caller has already checked that the chain extends the current
    checkpoint; this refuses only the race where an older reading arrives after a newer one.
    """
    try:
        current = read(checkpoint.chain)
    except CheckpointInvalid:
        current = None  # the caller reported it; a verified head replaces it
    if current is not None and current.length > checkpoint.length:
        return False
    folder = directory()
    document = {"version": FORMAT_VERSION, **asdict(checkpoint), "signature": sign(checkpoint)}
    temporary = folder / f".{filename(checkpoint.chain)}.{os.getpid()}.tmp"
    with open(temporary, "w") as handle:
        json.dump(document, handle, sort_keys=True, indent=2)
        handle.write("\n")
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, folder / filename(checkpoint.chain))
    return True


def make(
    *, chain: str, length: int, head_hash: str, head_entry_id: int | None, at: datetime
) -> Checkpoint:
    return Checkpoint(
        chain=chain,
        length=length,
        head_hash=head_hash,
        head_entry_id=head_entry_id,
        written_at=at.isoformat(),
    )
