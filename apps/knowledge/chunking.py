"""Text into chunks, positions kept.

Chunks are small and precise (matching and ranking run on them; parent_context grows a result
outward at return time). Each chunk stays on one page, so its citation names one page; chunks of
a document are numbered in reading order (``ordinal``), so ordinal ± 1 is the text right before
and after. Boundaries prefer a blank line, then a sentence end, then a space; a chunk never
splits a word unless the word alone is longer than a chunk. A paragraph with nothing a reader
would see (spaces, zero-width or control characters) is no chunk: embedding it costs the same
as real text and no search can ever want it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from apps.capabilities.documents import visible

TARGET_CHARS = 700
LIMIT_CHARS = 1000

_SENTENCE_END = re.compile(r"(?<=[.!?;:])\s+")


@dataclass(frozen=True)
class ChunkDraft:
    ordinal: int
    page: int | None
    text: str


def _pieces(text: str, limit: int) -> list[str]:
    """Paragraphs, cut into sentences and then words where one is longer than ``limit``."""
    out: list[str] = []
    for paragraph in re.split(r"\n\s*\n", text):
        paragraph = paragraph.strip()
        if not visible(paragraph):
            continue
        if len(paragraph) <= limit:
            out.append(paragraph)
            continue
        for sentence in _SENTENCE_END.split(paragraph):
            while len(sentence) > limit:
                cut = sentence.rfind(" ", 0, limit)
                cut = cut if cut > limit // 2 else limit
                piece = sentence[:cut].strip()
                if visible(piece):
                    out.append(piece)
                sentence = sentence[cut:].strip()
            if visible(sentence):
                out.append(sentence)
    return out


def chunk_pages(
    pages: list[tuple[int | None, str]], *, target: int = TARGET_CHARS, limit: int = LIMIT_CHARS
) -> list[ChunkDraft]:
    chunks: list[ChunkDraft] = []
    for page, text in pages:
        current: list[str] = []
        size = 0
        for piece in _pieces(text, limit):
            if current and size + 1 + len(piece) > target:
                chunks.append(ChunkDraft(len(chunks), page, "\n".join(current)))
                current, size = [], 0
            current.append(piece)
            size += len(piece) + (1 if size else 0)
        if current:
            chunks.append(ChunkDraft(len(chunks), page, "\n".join(current)))
    return chunks
