"""knowledge: ``search_documents`` over the collections the agent's spec connects.

The model asks *what*, never *where* (seed 000, "Búsqueda de conocimiento"): the runner resolves
the spec's ``knowledge_collections`` in the run's organization before the run and hands the tool
a searcher in ``RunResources.knowledge`` (``apps.knowledge.search.CollectionSearch``; this module
sits below the knowledge app and only uses what it is handed). Bound without collections the
capability attaches nothing: a search that always comes back empty is worse than none, because
the model keeps trying and reasons from the silence.

Each result names its document by file name and, for a paged type (PDF, presentation, .odt,
.rtf), the page — decided by the document's type when shown, so nothing needs re-ingesting.

Spend (seed 003, "Un run cuesta más que sus peticiones al modelo"): the searcher books the query's
embedding to this run through its meter; a query expansion (``query_analysis_mode``) is a model
request of the run's own model, admitted by the run's budget before it is sent (skipped, without a
request, when the budget is spent or the model fails: the search then runs as written) and booked
as one of the run's requests.

``parent_context`` grows each result outward from its match by position — the chunk before and
after (``window``) or as much around it as fits (``parent``), nearest first — with the added text
capped at 8,000 characters per result and 24,000 per search; the matching chunk is never cut, a
passage stops at the first chunk that does not fit or was already returned, and its citation says
"with surrounding text".
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, fields
from typing import Any, Literal, Protocol

from pydantic import BaseModel, Field
from pydantic_ai import RunContext

from ..tool_view import RunFacts, withheld_from_run
from ._toolsets import declared_toolset, parsed_config
from .failures import WrongArguments, budgeted

CAPABILITY_ID = "knowledge"
PER_RESULT_ADDED_CHARS = 8_000
PER_SEARCH_ADDED_CHARS = 24_000
# How far parent mode reads around a match, in chunks each way (a chunk is under 1,000
# characters, so this always covers 8,000 added characters).
PARENT_READ_CHUNKS = 12
MAX_TOP_K = 50

DOCUMENT_TYPES = {
    "pdf": "application/pdf",
    "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    "odt": "application/vnd.oasis.opendocument.text",
    "rtf": "application/rtf",
    "pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
    "markdown": "text/markdown",
    "text": "text/plain",
    "html": "text/html",
    "csv": "text/csv",
}


@dataclass(frozen=True)
class SearchFilters:
    """The business filters of one search; each narrows within the run's own scope, none can
    widen it (there is no tenant or collection field to set)."""

    document_id: int | None = None
    media_type: str | None = None
    org_unit: str | None = None
    source: str | None = None
    date_from: dt.datetime | None = None
    date_to: dt.datetime | None = None

    def is_empty(self) -> bool:
        return all(getattr(self, f.name) is None for f in fields(self))

    def as_params(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


class DocumentFilters(BaseModel):
    """Optional filters; every one narrows the search."""

    document_type: (
        Literal["pdf", "docx", "odt", "rtf", "pptx", "markdown", "text", "html", "csv"] | None
    ) = None
    org_unit: str | None = Field(None, max_length=120, description="An organizational unit.")
    source: str | None = Field(None, max_length=120)
    date_from: dt.date | None = Field(None, description="Documents added on or after this day.")
    date_to: dt.date | None = Field(None, description="Documents added on or before this day.")
    document_id: int | None = Field(None, ge=1)

    def as_search_filters(self) -> SearchFilters:
        def start(day: dt.date | None) -> dt.datetime | None:
            return None if day is None else dt.datetime.combine(day, dt.time(), tzinfo=dt.UTC)

        return SearchFilters(
            document_id=self.document_id,
            media_type=DOCUMENT_TYPES[self.document_type] if self.document_type else None,
            org_unit=self.org_unit or None,
            source=self.source or None,
            date_from=start(self.date_from),
            date_to=start(self.date_to + dt.timedelta(days=1)) if self.date_to else None,
        )


class DocumentSearcher(Protocol):
    """What the runner hands this tool (``apps.knowledge.search.CollectionSearch``)."""

    collections: tuple[Any, ...]
    org_units: tuple[str, ...]

    async def search(
        self, query: str, *, top_k: int, filters: SearchFilters, vector_text: str | None = None
    ) -> list[Any]: ...

    async def neighbours(self, hit: Any, *, before: int, after: int) -> list[tuple]: ...

    async def expand(self, model: Any, prompt: str) -> str | None: ...


INFERRED_FIELDS = ("document_type", "org_unit", "source", "date_from", "date_to")


def _self_query_prompt(query: str, units: tuple[str, ...], today: dt.date) -> str:
    unit_line = (
        "Organizational units (use one of these exactly, or none): " + "; ".join(units)
        if units
        else "Do not set org_unit."
    )
    return (
        "Read a search request and derive only the business filters it clearly implies. Answer "
        "with one JSON object and nothing else, with any of these keys: "
        f"document_type (one of {', '.join(DOCUMENT_TYPES)}), org_unit, source, date_from and "
        "date_to (YYYY-MM-DD, documents added in that range). Leave a key out when the request "
        f"does not imply it; answer {{}} when it implies none. Today is {today.isoformat()}. "
        f"{unit_line}\n\nSearch request: {query}"
    )


def _parse_inferred(text: str | None, units: tuple[str, ...]) -> DocumentFilters | None:
    """The inferred filters, validated like the model's own, narrowed to what the scope holds;
    None when the answer is no JSON object (the caller may ask once for a correction)."""
    import json

    if text is None:
        return None
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end < start:
        return None
    try:
        raw = json.loads(text[start : end + 1])
    except ValueError:
        return None
    if not isinstance(raw, dict):
        return None
    # Never a document id, and nothing but the business fields: an inference cannot widen scope.
    values = {k: v for k, v in raw.items() if k in INFERRED_FIELDS and v not in (None, "")}
    if "org_unit" in values and values["org_unit"] not in units:
        values.pop("org_unit")  # a unit the bound collections do not hold is dropped
    kept = {}
    for key, value in values.items():
        try:
            DocumentFilters(**{key: value})
        except ValueError:
            continue  # one bad field does not spoil the others
        kept[key] = value
    return DocumentFilters(**kept)


def _describe(filters: DocumentFilters) -> str:
    parts = [
        f"{name.replace('_', ' ')} {value}"
        for name in INFERRED_FIELDS
        if (value := getattr(filters, name)) is not None
    ]
    return ", ".join(parts)


def _citation(hit, *, grown: bool) -> str:
    where = hit.file_name
    if hit.cited_page is not None:
        where += f", page {hit.cited_page}"
    if grown:
        where += " (with surrounding text)"
    return where


def _fuse(result_lists: list[list[Any]], top_k: int) -> list[Any]:
    """Reciprocal rank fusion of several result lists (multi_query's queries)."""
    scores: dict[int, float] = {}
    hits: dict[int, Any] = {}
    for results in result_lists:
        for rank, hit in enumerate(results, start=1):
            scores[hit.chunk_id] = scores.get(hit.chunk_id, 0.0) + 1.0 / (60 + rank)
            hits[hit.chunk_id] = hit
    ordered = sorted(scores, key=lambda chunk_id: (-scores[chunk_id], chunk_id))
    return [hits[chunk_id] for chunk_id in ordered[:top_k]]


async def _grow(searcher, hits: list[Any], mode: str) -> list[tuple[Any, str, bool]]:
    """Each hit with its surrounding text (see the module docstring)."""
    returned: set[tuple[int, int]] = {(hit.document_id, hit.ordinal) for hit in hits}
    search_budget = PER_SEARCH_ADDED_CHARS
    passages = []
    reach = 1 if mode == "window" else PARENT_READ_CHUNKS
    for hit in hits:
        around = await searcher.neighbours(hit, before=reach, after=reach)
        by_ordinal = {ordinal: text for ordinal, _page, text in around}
        before: list[str] = []
        after: list[str] = []
        budget = min(PER_RESULT_ADDED_CHARS, search_budget)
        used = 0
        low, high = hit.ordinal - 1, hit.ordinal + 1
        low_open = high_open = True
        # Nearest first, alternating sides; each side stops at its first chunk that does not
        # fit or was already returned, so a passage is always contiguous text.
        while low_open or high_open:
            for side in ("before", "after"):
                ordinal = low if side == "before" else high
                if not (low_open if side == "before" else high_open):
                    continue
                text = by_ordinal.get(ordinal)
                cost = (len(text) + 1) if text is not None else 0
                if text is None or (hit.document_id, ordinal) in returned or used + cost > budget:
                    if side == "before":
                        low_open = False
                    else:
                        high_open = False
                    continue
                used += cost
                returned.add((hit.document_id, ordinal))
                if side == "before":
                    before.insert(0, text)
                    low -= 1
                else:
                    after.append(text)
                    high += 1
        search_budget -= used
        passage = "\n".join([*before, hit.text, *after])
        passages.append((hit, passage, bool(before or after)))
    return passages


def build_knowledge_toolset(binding, context):
    # Bound without collections, it attaches nothing; the manifest asks the same function.
    facts = RunFacts.of_resources(context.resources)
    if withheld_from_run(CAPABILITY_ID, "search_documents", facts):
        return None
    searcher = context.resources.knowledge
    config = parsed_config(CAPABILITY_ID, binding)

    @budgeted
    async def search_documents(
        ctx: RunContext[Any],
        query: str,
        top_k: int | None = None,
        filters: DocumentFilters | None = None,
        infer_filters: bool = True,
    ) -> str:
        query = " ".join((query or "").split())
        if not query:
            raise WrongArguments("query is empty: say what to look for, in natural language.")
        if top_k is not None and not 1 <= top_k <= MAX_TOP_K:
            raise WrongArguments(
                f"top_k must be between 1 and {MAX_TOP_K}; omit it for the default."
            )
        k = top_k if top_k is not None else config.default_top_k
        search_filters = filters.as_search_filters() if filters is not None else SearchFilters()
        inferred_line = ""
        if config.self_query_enabled and infer_filters and search_filters.is_empty():
            # The model's own filters always win; self-query only fills the gap, in the same scope.
            prompt = _self_query_prompt(query, searcher.org_units, dt.datetime.now(dt.UTC).date())
            answer = await searcher.expand(ctx.model, prompt)
            inferred = _parse_inferred(answer, searcher.org_units)
            if inferred is None and answer is not None:
                correction = await searcher.expand(
                    ctx.model,
                    f"{prompt}\n\nYour previous answer was not one JSON object:\n{answer[:500]}\n"
                    "Answer with the JSON object only.",
                )
                inferred = _parse_inferred(correction, searcher.org_units)
            if inferred is not None and _describe(inferred):
                search_filters = inferred.as_search_filters()
                inferred_line = (
                    f"Filters inferred from the question: {_describe(inferred)}. Pass "
                    "infer_filters=false to search again without them.\n"
                )

        queries = [query]
        vector_text = None
        if config.query_analysis_mode == "multi_query":
            n = config.query_analysis_max_variants
            written = await searcher.expand(
                ctx.model,
                f"Write up to {n} different rewordings of this search query, one per line, with "
                f"no numbering and nothing else:\n\n{query}",
            )
            if written:
                variants = [" ".join(line.strip(" -*•\t").split()) for line in written.splitlines()]
                queries += [v for v in dict.fromkeys(variants) if v and v != query][:n]
        elif config.query_analysis_mode == "hyde":
            vector_text = await searcher.expand(
                ctx.model,
                "Write a short passage (two or three sentences) that would answer this question "
                f"as a company document would state it. Only the passage:\n\n{query}",
            )

        # One retrieval per query, one after the other, each embedding its own query (and each
        # embedding booked to the run); a backend failure is a TransientFault, a retry request.
        result_lists = [
            await searcher.search(
                q, top_k=k, filters=search_filters, vector_text=vector_text if q == query else None
            )
            for q in queries
        ]
        hits = result_lists[0] if len(result_lists) == 1 else _fuse(result_lists, k)
        if not hits:
            return inferred_line + (
                f"No passage matched {query!r} in the connected collections. Try other words "
                "(a synonym, the term a document would use)."
            )
        if config.parent_context == "off":
            passages = [(hit, hit.text, False) for hit in hits]
        else:
            passages = await _grow(searcher, hits, config.parent_context)
        lines = [
            f"{inferred_line}{len(hits)} passage(s) for {query!r}, best first. Cite each by its document:"
        ]
        for number, (hit, passage, grown) in enumerate(passages, start=1):
            lines.append(f"\n[{number}] {_citation(hit, grown=grown)}\n{passage}")
        return "\n".join(lines)

    return declared_toolset(
        CAPABILITY_ID,
        binding,
        {"search_documents": search_documents},
        toolset_id="knowledge",
    )
