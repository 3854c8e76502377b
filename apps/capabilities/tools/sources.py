"""Sources: what a fetched page or a search result leaves for the console to show.

A tool that read or found pages returns them in its tool return's ``metadata`` under
:data:`SOURCES_METADATA` — a list of ``{"url", "title", "host"}`` — which the transcript stores
with the run, so the console can draw a source card (title, host, link) live from the
``tool_result`` frame and again after a reload from the stored transcript. The model never sees
it (pydantic-ai keeps a return's metadata out of the request).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

SOURCES_METADATA = "agenticos_sources"
MAX_TITLE_CHARS = 200


def source(url: str, title: str = "") -> dict[str, str]:
    """One source: the link as read, a one-line title (the host when there is none), the host."""
    host = (urlsplit(url).hostname or "").removeprefix("www.")
    title = " ".join((title or "").split())[:MAX_TITLE_CHARS] or host or url
    return {"url": url, "title": title, "host": host}


def sources_metadata(sources: list[dict[str, str]]) -> dict[str, Any]:
    return {SOURCES_METADATA: sources}


def sources_of(metadata: Any) -> list[dict[str, str]]:
    """The sources a tool return's metadata carries (an empty list when it carries none)."""
    if not isinstance(metadata, dict):
        return []
    found = metadata.get(SOURCES_METADATA)
    if not isinstance(found, list):
        return []
    return [
        {
            "url": str(s.get("url", "")),
            "title": str(s.get("title", "")),
            "host": str(s.get("host", "")),
        }
        for s in found
        if isinstance(s, dict) and str(s.get("url", "")).startswith(("http://", "https://"))
    ]
