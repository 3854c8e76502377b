from django.db import models


class DocumentStatus(models.TextChoices):
    """A document's index job (docs/knowledge.md, "Indexing"):

    ``queued`` (uploaded or re-index asked) → ``indexing`` (chunks_done of chunks_total embedded)
    → ``ready`` (searchable) or ``failed`` (``failure_reason`` says why). A re-index goes back to
    ``queued`` from ready or failed, or from indexing whose lease lapsed. The indexing sweep
    moves a document whose worker died (its lease lapsed) from indexing back to ``queued``, or to
    ``failed`` after ``INDEX_MAX_ATTEMPTS`` claims. A queued document may wait there while its
    organization has ``KNOWLEDGE_MAX_INDEXING_PER_ORG`` documents indexing.
    """

    QUEUED = "queued", "Queued"
    INDEXING = "indexing", "Indexing"
    READY = "ready", "Ready"
    FAILED = "failed", "Failed"


IN_PROGRESS_STATUSES = (DocumentStatus.QUEUED, DocumentStatus.INDEXING)
REINDEXABLE_STATUSES = (DocumentStatus.READY, DocumentStatus.FAILED)


class Embedder(models.TextChoices):
    LOCAL = "local", "Built-in (all-MiniLM-L6-v2, offline, free)"
    PROFILE = "profile", "OpenAI-compatible endpoint (a model profile)"
