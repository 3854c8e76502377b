"""Celery: a document id in, the index job run (services.document_index)."""

from __future__ import annotations

import logging

from celery import shared_task

from .choices import DocumentStatus
from .models import Document
from .services import INDEX_DOCUMENT_TASK, document_index

logger = logging.getLogger(__name__)


@shared_task(name=INDEX_DOCUMENT_TASK, acks_late=True, ignore_result=True)
def index_document_task(document_id: int) -> None:
    try:
        document_index(document_id)
    except Exception:
        # Named and kept on the document, never swallowed: the console shows it as failed.
        logger.exception("indexing document %s failed", document_id)
        Document.objects.filter(pk=document_id, status=DocumentStatus.INDEXING).update(
            status=DocumentStatus.FAILED,
            failure_reason="Indexing failed with an internal error; the details are in the worker log.",
        )
        raise
