"""Recomputing the chains, and writing their checkpoints once they check out.

`verify_chains` is what `agenticos audit-verify` runs; `write_checkpoints` is the hourly task.
Seed 003: this is detection, not prevention — an operator with the database can still rewrite a
row and recompute every later hash. The checkpoints (apps/audit/checkpoints.py) narrow that:
a re-forged chain no longer matches the head a checkpoint recorded, as long as the checkpoint
directory and key are out of that operator's reach.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from django.db import transaction
from django.utils import timezone

from . import checkpoints
from .chain import GENESIS_HASH, HASHED_FIELDS, entry_hash
from .models import AuditEntry, chain_name

_COLUMNS = ("id", *HASHED_FIELDS, "entry_hash")
CHUNK = 5_000


@dataclass
class ChainReport:
    """What verifying one chain found. ``problem`` is None when the chain checks out."""

    chain: str
    length: int = 0
    head_hash: str = GENESIS_HASH
    head_entry_id: int | None = None
    checked: int = 0
    problem: str | None = None
    bad_entry_id: int | None = None
    bad_sequence: int | None = None
    checkpoint: checkpoints.Checkpoint | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.problem is None

    def fail(
        self, problem: str, *, entry_id: int | None = None, sequence: int | None = None
    ) -> None:
        if self.problem is None:
            self.problem, self.bad_entry_id, self.bad_sequence = problem, entry_id, sequence

    def summary(self) -> str:
        if self.problem:
            return f"{self.chain}: FAILED — {self.problem}"
        if self.length == 0:
            return f"{self.chain}: ok, empty"
        return (
            f"{self.chain}: ok, {self.length} entries (checked {self.checked}), "
            f"head #{self.head_entry_id} {self.head_hash[:16]}…"
        )


def _walk(report: ChainReport, rows: Iterable[tuple], *, expected: int, prev_hash: str) -> None:
    """Check `rows` (ordered by sequence) continue a chain whose next position is `expected`."""
    checkpoint = report.checkpoint
    for row in rows:
        values = dict(zip(_COLUMNS, row, strict=True))
        entry_id, sequence, stored = values["id"], values["sequence"], values["entry_hash"]
        if sequence != expected:
            missing = (
                f"sequence {expected}"
                if sequence == expected + 1
                else f"sequences {expected}–{sequence - 1}"
            )
            report.fail(
                f"entry #{entry_id} (sequence {sequence}) follows a gap: {missing} missing "
                "(deleted from the middle of the chain)",
                entry_id=entry_id,
                sequence=sequence,
            )
            return
        if values["prev_hash"] != prev_hash:
            report.fail(
                f"entry #{entry_id} (sequence {sequence}) does not link to the entry before it "
                "(moved, inserted, or an earlier entry was replaced)",
                entry_id=entry_id,
                sequence=sequence,
            )
            return
        if entry_hash(values) != stored:
            report.fail(
                f"entry #{entry_id} (sequence {sequence}) no longer matches its hash (edited)",
                entry_id=entry_id,
                sequence=sequence,
            )
            return
        if (
            checkpoint is not None
            and sequence == checkpoint.length
            and stored != checkpoint.head_hash
        ):
            report.fail(
                f"entry #{entry_id} (sequence {sequence}) differs from the checkpoint written "
                f"{checkpoint.written_at} (the chain was re-forged from here or earlier)",
                entry_id=entry_id,
                sequence=sequence,
            )
            return
        prev_hash, expected = stored, expected + 1
        report.checked += 1
        report.length, report.head_hash, report.head_entry_id = sequence, stored, entry_id


def _check_against_checkpoint(report: ChainReport) -> None:
    checkpoint = report.checkpoint
    if checkpoint is None or not report.ok:
        return
    if report.length == 0 and checkpoint.length > 0:
        report.fail(
            f"the whole chain is gone: the checkpoint written {checkpoint.written_at} recorded "
            f"{checkpoint.length} entries (head #{checkpoint.head_entry_id})"
        )
    elif report.length < checkpoint.length:
        report.fail(
            f"the newest entries were removed: the chain ends at sequence {report.length} "
            f"(#{report.head_entry_id}) but the checkpoint written {checkpoint.written_at} recorded "
            f"{checkpoint.length} entries up to #{checkpoint.head_entry_id}; sequence "
            f"{report.length + 1} onwards is missing",
            sequence=report.length + 1,
        )


def _load_checkpoint(report: ChainReport) -> None:
    try:
        report.checkpoint = checkpoints.read(report.chain)
    except checkpoints.CheckpointInvalid as error:
        report.fail(f"checkpoint not trusted: {error}")
        return
    if report.checkpoint is None:
        report.notes.append(
            "no checkpoint yet: trimming the newest entries is not detectable before the first one"
        )


def _rows(chain: str, *, after: int = 0):
    return (
        AuditEntry.objects.filter(chain=chain, sequence__gt=after)
        .order_by("sequence")
        .values_list(*_COLUMNS)
        .iterator(chunk_size=CHUNK)
    )


def verify_chain(chain: str) -> ChainReport:
    """Recompute every entry of `chain` from its first, and compare it with its checkpoint."""
    report = ChainReport(chain=chain)
    _load_checkpoint(report)
    if not report.ok:
        return report
    # One snapshot: entries appended while this runs are simply after the head it reports.
    with transaction.atomic():
        _walk(report, _rows(chain), expected=1, prev_hash=GENESIS_HASH)
    _check_against_checkpoint(report)
    return report


def verify_chain_since_checkpoint(chain: str) -> ChainReport:
    """Check `chain` still extends its checkpoint, recomputing only the entries after it.

    The hourly task's cheaper check before it moves a checkpoint forward: the head it recorded is
    still there, unchanged, and everything appended since links to it.
    """
    report = ChainReport(chain=chain)
    _load_checkpoint(report)
    checkpoint = report.checkpoint
    if not report.ok:
        return report
    if checkpoint is None or checkpoint.length == 0:
        return verify_chain(chain)
    with transaction.atomic():
        anchor = (
            AuditEntry.objects.filter(chain=chain, sequence=checkpoint.length)
            .values_list("id", "entry_hash")
            .first()
        )
        if anchor is None:
            newest = (
                AuditEntry.objects.filter(chain=chain)
                .order_by("-sequence")
                .values_list("sequence", "id")
                .first()
            )
            report.length, report.head_entry_id = newest if newest else (0, None)
            _check_against_checkpoint(report)
            # Still longer than the checkpoint but without its head: a hole exactly there.
            report.fail(
                f"sequence {checkpoint.length}, the head the checkpoint recorded, is missing",
                sequence=checkpoint.length,
            )
            return report
        anchor_id, anchor_hash = anchor
        if anchor_hash != checkpoint.head_hash:
            report.fail(
                f"entry #{anchor_id} (sequence {checkpoint.length}) differs from the checkpoint written "
                f"{checkpoint.written_at}",
                entry_id=anchor_id,
                sequence=checkpoint.length,
            )
            return report
        report.length, report.head_hash, report.head_entry_id = (
            checkpoint.length,
            anchor_hash,
            anchor_id,
        )
        _walk(
            report,
            _rows(chain, after=checkpoint.length),
            expected=checkpoint.length + 1,
            prev_hash=anchor_hash,
        )
    return report


def chains_to_check(organization_id: int | None = None, *, only: bool = False) -> list[str]:
    """Every chain in the database or on disk; with `only`, just the one named."""
    if only:
        return [chain_name(organization_id)]
    in_database = set(AuditEntry.objects.values_list("chain", flat=True).distinct())
    return sorted(in_database | set(checkpoints.chains_on_disk()))


def record_checkpoint(report: ChainReport) -> bool:
    """Write `report`'s head as the chain's checkpoint (only a chain that checked out)."""
    if not report.ok or report.length == 0:
        return False
    return checkpoints.write(
        checkpoints.make(
            chain=report.chain,
            length=report.length,
            head_hash=report.head_hash,
            head_entry_id=report.head_entry_id,
            at=timezone.now(),
        )
    )


def verify_chains(chains: list[str], *, write: bool = True) -> list[ChainReport]:
    """Verify every chain in `chains` fully; checkpoint the ones that check out."""
    with checkpoints.locked():
        reports = [verify_chain(chain) for chain in chains]
        if write:
            for report in reports:
                record_checkpoint(report)
    return reports


def write_checkpoints() -> list[ChainReport]:
    """The hourly job: move each sound chain's checkpoint to its current head.

    A chain that no longer extends its checkpoint keeps the old one, which is the evidence
    `audit-verify` reports.
    """
    with checkpoints.locked():
        reports = [verify_chain_since_checkpoint(chain) for chain in chains_to_check()]
        for report in reports:
            record_checkpoint(report)
    return reports
