"""Celery tasks of the audit app."""

from __future__ import annotations

import logging

from celery import shared_task

from agenticos.schedule import HOUR, single_flight

from .verify import write_checkpoints

logger = logging.getLogger(__name__)


@shared_task(name="apps.audit.tasks.write_audit_checkpoints", ignore_result=True)
def write_audit_checkpoints() -> dict:
    """Hourly: move each sound chain's signed checkpoint to its head (see apps/audit/checkpoints.py).

    Two beats cannot run it at once (single_flight), and the checkpoint directory's lock keeps
    it from interleaving with an `audit-verify` run on the same host. A chain
    that no longer extends its checkpoint is logged as an error and its checkpoint is left as
    evidence for `audit-verify`.
    """
    with single_flight("audit-checkpoints", ttl_seconds=HOUR // 2) as acquired:
        if not acquired:
            logger.info("audit checkpoints: another worker is writing them; skipped")
            return {"skipped": True}
        reports = write_checkpoints()
    failed = [report for report in reports if not report.ok]
    for report in failed:
        logger.error("audit chain failed its checkpoint check: %s", report.summary())
    return {"chains": len(reports), "failed": [report.chain for report in failed]}
