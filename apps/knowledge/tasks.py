"""Celery: a document id in, the index job run (services.document_index); the indexing sweep."""

from __future__ import annotations

import logging

from celery import shared_task

from agenticos.schedule import single_flight

from . import services
from .services import INDEX_DOCUMENT_TASK

logger = logging.getLogger(__name__)

# Longer than a sweep can take, shorter than its period: a beat that died holding it frees it.
INDEXING_SWEEP_LOCK_SECONDS = 50


@shared_task(name=INDEX_DOCUMENT_TASK, acks_late=True, ignore_result=True)
def index_document_task(document_id: int) -> None:
    try:
        services.document_index(document_id)
    except Exception:
        # The service has already failed the document with a sentence the console shows; the
        # worker's log keeps what went wrong.
        logger.exception("indexing document %s failed", document_id)
        raise


@shared_task(name="apps.knowledge.tasks.sweep_indexing_leases", ignore_result=True)
def sweep_indexing_leases() -> int:
    """Every minute: take back documents whose indexing worker stopped renewing its lease."""
    with single_flight("knowledge.sweep_indexing_leases", INDEXING_SWEEP_LOCK_SECONDS) as acquired:
        if not acquired:
            return 0
        return services.documents_sweep_lapsed_leases()
