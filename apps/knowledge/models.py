"""Collections, their documents and the documents' chunks (docs/knowledge.md)."""

from __future__ import annotations

from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVectorField
from django.db import models
from pgvector.django import VectorField

from .choices import DocumentStatus, Embedder

NAME_MAX = 120
FILE_NAME_MAX = 255
# The dimensions a collection's vectors may have: each has its own HNSW index (a partial index
# over the vectors cast to that size, migration 0002), since one index needs one size.
SUPPORTED_DIMENSIONS = (384, 768, 1024, 1536)


class Collection(models.Model):
    """A set of documents an agent can be connected to (``AgentSpec.knowledge_collections``).

    Every member may read an open collection; a ``restricted`` one is read only by the people
    granted it (``CollectionGrant``), its creator and those who manage the organization's
    knowledge. Reading matters at publish: an agent may be connected only to collections its
    publisher may read. The embedder is fixed at creation — vectors of two models cannot be
    compared, so changing it would mean re-indexing everything.
    """

    organization = models.ForeignKey(
        "orgs.Organization", on_delete=models.CASCADE, related_name="knowledge_collections"
    )
    name = models.CharField(max_length=NAME_MAX)
    description = models.CharField(max_length=300, blank=True)
    restricted = models.BooleanField(
        default=False, help_text="Only granted people (and knowledge managers) may read it."
    )
    embedder = models.CharField(max_length=16, choices=Embedder.choices, default=Embedder.LOCAL)
    embedding_profile = models.ForeignKey(
        "agents.ModelProfile",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="+",
        help_text="The OpenAI-compatible endpoint that embeds this collection.",
    )
    embedding_model = models.CharField(max_length=200)
    dimensions = models.PositiveSmallIntegerField()
    created_by = models.ForeignKey(
        "orgs.User", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["organization", "name"]
        constraints = [
            models.UniqueConstraint(
                fields=["organization", "name"], name="knowledge_collection_org_name_unique"
            ),
        ]

    def __str__(self) -> str:
        return self.name


class CollectionGrant(models.Model):
    """One person's right to read a restricted collection."""

    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="grants")
    user = models.ForeignKey("orgs.User", on_delete=models.CASCADE, related_name="+")
    granted_by = models.ForeignKey(
        "orgs.User", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["collection", "user"], name="knowledge_grant_collection_user_unique"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.user_id} may read {self.collection_id}"


class Document(models.Model):
    """One uploaded file and its index job. The bytes are kept (``content``) so a re-index
    needs no second upload; ``status`` moves as ``DocumentStatus`` says."""

    organization = models.ForeignKey(
        "orgs.Organization", on_delete=models.CASCADE, related_name="knowledge_documents"
    )
    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="documents")
    file_name = models.CharField(max_length=FILE_NAME_MAX)
    media_type = models.CharField(max_length=120)
    size_bytes = models.PositiveBigIntegerField()
    sha256 = models.CharField(max_length=64)
    content = models.BinaryField()
    # Business metadata self-query may filter on (an organizational unit, where it came from).
    org_unit = models.CharField(max_length=120, blank=True)
    source = models.CharField(max_length=120, blank=True, default="upload")
    status = models.CharField(
        max_length=16, choices=DocumentStatus.choices, default=DocumentStatus.QUEUED
    )
    chunks_total = models.PositiveIntegerField(default=0)
    chunks_done = models.PositiveIntegerField(default=0)
    failure_reason = models.CharField(max_length=500, blank=True)
    # The worker indexing the document renews this lease while it lives; once it lapses the
    # indexing sweep requeues the document (or fails it after INDEX_MAX_ATTEMPTS), and a re-index
    # is accepted: a worker killed mid-job no longer leaves it "indexing" for ever.
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    # Claims since the upload or the last re-index. Also the claim's fencing token: a worker
    # whose lease lapsed and whose document was claimed again writes nothing more.
    attempts = models.PositiveSmallIntegerField(default=0)
    pages = models.PositiveIntegerField(null=True, blank=True)
    uploaded_by = models.ForeignKey(
        "orgs.User", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    indexed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["collection", "-created_at"]
        indexes = [
            # The collection page's list, newest first.
            models.Index(fields=["collection", "-created_at"], name="knowledge_doc_coll_created"),
            # The per-organization indexing quota (documents indexing now), the queue behind it
            # (oldest queued first) and the indexing sweep (leases of documents indexing).
            models.Index(
                fields=["organization", "status", "created_at"],
                condition=models.Q(status__in=["queued", "indexing"]),
                name="knowledge_doc_in_flight",
            ),
        ]

    def __str__(self) -> str:
        return self.file_name


class Chunk(models.Model):
    """A few hundred characters of a document, in order (``ordinal``), with its page when the
    format has pages, its vector and its full-text vector. Consecutive chunks of a document are
    contiguous text, so growing a result to its neighbours never joins text that was apart."""

    organization = models.ForeignKey(
        "orgs.Organization", on_delete=models.CASCADE, related_name="+"
    )
    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="chunks_all")
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="chunks")
    ordinal = models.PositiveIntegerField()
    page = models.PositiveIntegerField(null=True, blank=True)
    text = models.TextField()
    # Untyped vector: each collection has its own size; the HNSW indexes are per size (0002).
    embedding = VectorField(null=True)
    dimensions = models.PositiveSmallIntegerField()
    search_vector = SearchVectorField(null=True)

    class Meta:
        ordering = ["document", "ordinal"]
        constraints = [
            # parent_context reads a match's neighbours by (document, ordinal).
            models.UniqueConstraint(
                fields=["document", "ordinal"], name="knowledge_chunk_doc_ordinal_unique"
            ),
        ]
        indexes = [
            # The full-text half of hybrid retrieval (websearch_to_tsquery @@ search_vector).
            GinIndex(fields=["search_vector"], name="knowledge_chunk_fts"),
            # The search scope: an organization's chunks in the agent's collections.
            models.Index(fields=["collection", "dimensions"], name="knowledge_chunk_scope"),
        ]

    def __str__(self) -> str:
        return f"{self.document_id}#{self.ordinal}"


SKILL_NAME_MAX = 64
SKILL_DESCRIPTION_MAX = 1024
SKILL_BODY_MAX = 200_000
SKILL_FILES_MAX = 20
SKILL_FILE_MAX = 100_000


class Skill(models.Model):
    """Written know-how an agent loads only when it decides it is relevant (seed 000, "Skills").

    The name and description sit in the catalog the model reads every turn; the body loads on
    demand (pydantic-ai's ``load_capability``); ``files`` (file name → text) are read with
    ``read_skill_resource``. Bound to agents by id (``AgentSpec.skill_ids``).
    """

    organization = models.ForeignKey(
        "orgs.Organization", on_delete=models.CASCADE, related_name="skills"
    )
    name = models.CharField(max_length=SKILL_NAME_MAX)
    description = models.CharField(max_length=SKILL_DESCRIPTION_MAX)
    body = models.TextField(blank=True, default="")
    files = models.JSONField(default=dict, blank=True)
    created_by = models.ForeignKey(
        "orgs.User", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name", "pk"]
        constraints = [
            models.UniqueConstraint(fields=["organization", "name"], name="skill_name_per_org")
        ]

    def __str__(self) -> str:
        return self.name
