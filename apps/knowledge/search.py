"""Hybrid retrieval over an agent's collections: what ``search_documents`` is handed.

The runner resolves a :class:`CollectionSearch` before the run — the organization and the
collections the published spec names, read in the organization's scope — so the tool asks *what*
and never *where*. Every statement carries both the organization and the collection ids, so no
query (an expansion, a neighbour read for surrounding text) can reach another tenant's rows.

Retrieval (docs/knowledge.md, "Hybrid retrieval"): the query's embedding against the chunks'
vectors (cosine distance; the HNSW index for the collection's vector size once the scope is large,
an exact scan below that, where it is both exact and fast) and PostgreSQL full text
(``websearch_to_tsquery`` ranked by ``ts_rank_cd``), each taking its best candidates, fused by
reciprocal rank fusion (score = Σ 1 / (60 + rank)). Statements go out on the run's own database
session from its event loop (``agenticos.loopdb``), like the budget guard's.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field

from pydantic_ai.messages import ModelRequest, TextPart, UserPromptPart
from pydantic_ai.models import ModelRequestParameters

from agenticos.loopdb import Statement
from apps.capabilities.documents import PAGED_TYPES
from apps.capabilities.tools.failures import TransientFault
from apps.capabilities.tools.knowledge import SearchFilters
from apps.spend.guard import current_meter
from apps.spend.models import EntryKind
from apps.spend.services import BudgetExceeded

from .embedders import (
    Embedded,
    Embedder,
    EmbeddingFailed,
    OpenAICompatibleEmbedder,
    local_embedder,
)
from .models import SUPPORTED_DIMENSIONS

# Reciprocal rank fusion's constant (Cormack et al.: 60 works across collections).
RRF_K = 60
# Candidates each half contributes before fusion, at least.
MIN_CANDIDATES = 40
# Below this many chunks in scope the vector half scans exactly: precise under any filter, and
# about as fast as the index at that size (an exact scan of 25,000 chunks took ~200 ms here,
# the index under 1 ms). Above it, the HNSW index answers.
EXACT_SCAN_MAX_CHUNKS = 5_000
HNSW_EF_SEARCH = 100

logger = logging.getLogger(__name__)


def _vector_literal(vector: list[float]) -> str:
    return "[" + ",".join(f"{x:.7g}" for x in vector) + "]"


# The documents a search may return: ready, in scope, and passing the business filters. Read as
# a hashed subplan, so each half is driven by its own chunk index (HNSW or GIN) and checks a
# chunk's document against a hash of this set, instead of walking every document's chunks.
_DOCUMENTS = """
    c.document_id IN (
        SELECT d.id FROM knowledge_document d
        WHERE d.organization_id = %(org)s AND d.collection_id = ANY(%(collections)s)
          AND d.status = 'ready'
          AND (%(document_id)s::bigint IS NULL OR d.id = %(document_id)s)
          AND (%(media_type)s::text IS NULL OR d.media_type = %(media_type)s)
          AND (%(org_unit)s::text IS NULL OR d.org_unit = %(org_unit)s)
          AND (%(source)s::text IS NULL OR d.source = %(source)s)
          AND (%(date_from)s::timestamptz IS NULL OR d.created_at >= %(date_from)s)
          AND (%(date_to)s::timestamptz IS NULL OR d.created_at < %(date_to)s)
    )
"""


def _hybrid_sql(dimensions: int, *, exact: bool) -> str:
    assert dimensions in SUPPORTED_DIMENSIONS  # an int the SQL names: never caller text
    if exact:
        distance = "(c.embedding <=> %(vector)s::vector)"
    else:
        # The shape of the partial HNSW index (migration 0002): cast, then cosine distance.
        distance = f"(c.embedding::vector({dimensions}) <=> %(vector)s::vector({dimensions}))"
    return f"""
WITH vec AS (
    SELECT c.id, {distance} AS distance
    FROM knowledge_chunk c
    WHERE c.organization_id = %(org)s AND c.collection_id = ANY(%(collections)s)
      AND c.dimensions = {dimensions} AND {_DOCUMENTS}
    ORDER BY {distance}
    LIMIT %(candidates)s
), vec_ranked AS (
    SELECT id, row_number() OVER (ORDER BY distance, id) AS rank FROM vec
), txt AS (
    SELECT c.id, ts_rank_cd(c.search_vector, q.query) AS score
    FROM knowledge_chunk c, websearch_to_tsquery(%(config)s::regconfig, %(text)s) AS q(query)
    WHERE c.search_vector @@ q.query
      AND c.organization_id = %(org)s AND c.collection_id = ANY(%(collections)s)
      AND {_DOCUMENTS}
    ORDER BY score DESC, c.id
    LIMIT %(candidates)s
), txt_ranked AS (
    SELECT id, row_number() OVER (ORDER BY score DESC, id) AS rank FROM txt
), fused AS (
    SELECT id, sum(1.0 / ({RRF_K} + rank)) AS score
    FROM (SELECT id, rank FROM vec_ranked UNION ALL SELECT id, rank FROM txt_ranked) AS both_halves
    GROUP BY id
)
SELECT c.id, c.document_id, d.file_name, d.media_type, c.page, c.ordinal, c.text,
       fused.score::float8, c.collection_id
FROM fused JOIN knowledge_chunk c ON c.id = fused.id JOIN knowledge_document d ON d.id = c.document_id
ORDER BY fused.score DESC, c.id
LIMIT %(top_k)s
"""


_STATEMENTS = {
    (dimensions, exact): Statement(
        f"knowledge_hybrid_{dimensions}_{'exact' if exact else 'hnsw'}",
        _hybrid_sql(dimensions, exact=exact),
    )
    for dimensions in SUPPORTED_DIMENSIONS
    for exact in (True, False)
}

# The search statement is prepared (agenticos/loopdb.py), and after five runs PostgreSQL would
# switch it to a generic plan that cannot see the query vector or which filters are null: it
# then walked the scope instead of the HNSW index (a search went from ~150 ms to ~400–1,000 ms at
# 25,000–100,000 chunks in the benchmark). Custom plans are asked for around the search and the
# session's default put back after it.
_BEFORE_SEARCH = Statement(
    "knowledge_before_search",
    "SELECT set_config('hnsw.ef_search', %(value)s::text, false),"
    " set_config('plan_cache_mode', 'force_custom_plan', false)",
)
_AFTER_SEARCH = Statement(
    "knowledge_after_search", "SELECT set_config('plan_cache_mode', 'auto', false)"
)

_NEIGHBOURS = Statement(
    "knowledge_neighbours",
    """
SELECT c.ordinal, c.page, c.text FROM knowledge_chunk c
WHERE c.organization_id = %(org)s AND c.collection_id = ANY(%(collections)s)
  AND c.document_id = %(document)s AND c.ordinal BETWEEN %(low)s AND %(high)s
ORDER BY c.ordinal
""",
)


@dataclass(frozen=True)
class CollectionRef:
    """One bound collection as the run sees it: plain data read before the run."""

    id: int
    name: str
    dimensions: int
    embedder: str  # "local" or "profile"
    embedding_model: str
    chunk_count: int = 0
    base_url: str = ""
    # The profile's provider (``openai`` prices by genai-prices' OpenAI table).
    provider: str = "local"
    # The profile's key, decrypted before the run for an OpenAI-compatible embedder.
    api_key: str = field(default="", repr=False)


@dataclass(frozen=True)
class Hit:
    chunk_id: int
    document_id: int
    file_name: str
    media_type: str
    page: int | None
    ordinal: int
    text: str
    score: float
    collection_id: int

    @property
    def cited_page(self) -> int | None:
        """The page a reader can open, decided by the document's type when shown (a .docx or a
        Markdown file has none, whatever was stored)."""
        return self.page if self.media_type in PAGED_TYPES else None


@dataclass
class CollectionSearch:
    """The collections one run may search, and how to search them."""

    organization_id: int
    collections: tuple[CollectionRef, ...]
    text_config: str = "english"
    # Units the bound collections hold (for self-query); empty when more than 200.
    org_units: tuple[str, ...] = ()

    @property
    def collection_ids(self) -> list[int]:
        return [c.id for c in self.collections]

    def _groups(self) -> dict[tuple, list[CollectionRef]]:
        groups: dict[tuple, list[CollectionRef]] = {}
        for ref in self.collections:
            key = (ref.embedder, ref.embedding_model, ref.dimensions, ref.base_url, ref.api_key)
            groups.setdefault(key, []).append(ref)
        return groups

    @staticmethod
    def embedder_for(ref: CollectionRef) -> Embedder:
        if ref.embedder == "local":
            return local_embedder()
        return OpenAICompatibleEmbedder(
            base_url=ref.base_url,
            model_name=ref.embedding_model,
            api_key=ref.api_key,
            dimensions=ref.dimensions,
            provider=ref.provider,
        )

    @staticmethod
    def _meter():
        meter = current_meter()
        if meter is None:  # only a run searches: its meter is its session and its ledger
            raise TransientFault("The document search is not available right now; try again.")
        return meter

    async def search(
        self,
        query: str,
        *,
        top_k: int,
        filters: SearchFilters,
        vector_text: str | None = None,
    ) -> list[Hit]:
        """The ``top_k`` best chunks for ``query``, on the run's session. ``vector_text``
        (HyDE's hypothetical answer) is embedded instead of the query for the vector half. Each
        query embedding is booked to the run through its meter."""
        meter = self._meter()
        db = meter.db
        fused: dict[int, tuple[float, Hit]] = {}
        groups = self._groups()
        for (_, _, dimensions, _, _), refs in groups.items():
            embedder = self.embedder_for(refs[0])
            try:
                embedded: Embedded = await asyncio.to_thread(embedder.embed, [vector_text or query])
            except EmbeddingFailed as exc:
                raise TransientFault(f"The search backend failed: {exc} Try again.") from exc
            await meter.charge(
                kind=EntryKind.EMBEDDING,
                provider=embedded.provider,
                model_name=embedded.model_name,
                input_tokens=embedded.input_tokens,
            )
            exact = sum(r.chunk_count for r in refs) <= EXACT_SCAN_MAX_CHUNKS
            await db.fetch(_BEFORE_SEARCH, {"value": str(max(HNSW_EF_SEARCH, top_k * 4))})
            try:
                rows = await self._hybrid(
                    db, dimensions, exact, refs, embedded, query, top_k, filters
                )
            finally:
                await db.fetch(_AFTER_SEARCH, {})
            for rank, row in enumerate(rows, start=1):
                hit = Hit(
                    chunk_id=row[0],
                    document_id=row[1],
                    file_name=row[2],
                    media_type=row[3],
                    page=row[4],
                    ordinal=row[5],
                    text=row[6],
                    score=float(row[7]),
                    collection_id=row[8],
                )
                # Several embedders: each group's order fused again by rank.
                score = hit.score if len(groups) == 1 else 1.0 / (RRF_K + rank)
                if hit.chunk_id not in fused or fused[hit.chunk_id][0] < score:
                    fused[hit.chunk_id] = (score, hit)
        ordered = sorted(fused.values(), key=lambda pair: (-pair[0], pair[1].chunk_id))
        return [hit for _, hit in ordered[:top_k]]

    async def _hybrid(self, db, dimensions, exact, refs, embedded, query, top_k, filters):
        return await db.fetch(
            _STATEMENTS[(dimensions, exact)],
            {
                "org": self.organization_id,
                "collections": [r.id for r in refs],
                "vector": _vector_literal(embedded.vectors[0]),
                "config": self.text_config,
                "text": query,
                "candidates": max(MIN_CANDIDATES, top_k * 4),
                "top_k": top_k,
                **filters.as_params(),
            },
        )

    async def neighbours(
        self, hit: Hit, *, before: int, after: int
    ) -> list[tuple[int, int | None, str]]:
        """The chunks around ``hit`` by position (never the whole document), in order, within
        the same organization and collections as the search."""
        rows = await self._meter().db.fetch(
            _NEIGHBOURS,
            {
                "org": self.organization_id,
                "collections": self.collection_ids,
                "document": hit.document_id,
                "low": max(0, hit.ordinal - before),
                "high": hit.ordinal + after,
            },
        )
        return [(row[0], row[1], row[2]) for row in rows]

    async def expand(self, model, prompt: str) -> str | None:
        """One request of the run's own model for a query expansion, admitted by the run's
        budget before it is sent and booked as one of the run's requests. None — nothing sent,
        or nothing usable — when the budget is spent or the model fails: the search then runs with
        the query as written instead of failing."""
        meter = current_meter()
        if meter is None or model is None:
            return None
        estimate = meter.side_estimate(len(prompt))
        try:
            await meter.admit_side_request(estimate)
        except BudgetExceeded:
            return None
        try:
            response = await model.request(
                [ModelRequest(parts=[UserPromptPart(content=prompt)])],
                None,
                ModelRequestParameters(),
            )
        except Exception:  # a model that cannot answer a plain request: search as written
            logger.warning("query expansion failed; searching the query as written", exc_info=True)
            await meter.release_side_request(estimate)
            return None
        await meter.settle_side_request(response, estimate)
        text = "".join(p.content for p in response.parts if isinstance(p, TextPart)).strip()
        return text or None
