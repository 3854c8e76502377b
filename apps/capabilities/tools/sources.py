"""Sources: what a fetched page or a search result leaves for the console to show.

A tool that read or found pages returns them in its tool return's ``metadata`` under
:data:`SOURCES_METADATA` — a list of ``{"url", "title", "host"}`` — which the transcript stores
with the run, so the console can draw a source card (title, host, link) live from the
``tool_result`` frame and again after a reload from the stored transcript. The model never sees
it (pydantic-ai keeps a return's metadata out of the request).

The chat's transcript (``apps.runs.transcript``) reads them back per tool return with
:func:`sources_of` (the reload path), and :func:`web_activity` lists each web call of a transcript with its URL or query and its outcome,
for a run's detail view.
"""

from __future__ import annotations

import json
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


WEB_TOOL_IDS = ("web_fetch", "web_search")


def web_activity(
    transcript: list[dict] | None, tool_names: dict[str, str] | None = None
) -> list[dict[str, str]]:
    """Each web_fetch / web_search call of a stored transcript: ``{"tool", "target", "outcome",
    "detail"}`` — the URL or query asked; ``read`` / ``found``, ``retried`` (a retry request),
    ``refused`` or ``failed`` (the same messages returned on the last attempt); and the first line
    of what came back. ``tool_names`` maps a renamed tool's visible name to its id."""
    names = {name: name for name in WEB_TOOL_IDS} | dict(tool_names or {})
    calls: dict[str, tuple[str, str]] = {}
    rows = []
    for message in transcript or []:
        for part in message.get("parts") or []:
            kind = part.get("part_kind")
            tool = names.get(part.get("tool_name") or "")
            if tool is None:
                continue
            if kind == "tool-call":
                args = part.get("args")
                if isinstance(args, str):
                    try:
                        args = json.loads(args)
                    except ValueError:
                        args = {}
                args = args if isinstance(args, dict) else {}
                target = str(args.get("url") if tool == "web_fetch" else args.get("query") or "")
                calls[part.get("tool_call_id") or ""] = (tool, target)
            elif kind in ("tool-return", "retry-prompt"):
                tool, target = calls.get(part.get("tool_call_id") or "", (tool, ""))
                content = part.get("content")
                text = content if isinstance(content, str) else str(content or "")
                retried = kind == "retry-prompt" or part.get("outcome") == "retried"
                if retried:
                    outcome = "retried"
                elif text.startswith("Refused to read") or "refused the agent's API key" in text:
                    outcome = "refused"
                elif (
                    text.startswith("Could not read")
                    or "could not be reached" in text
                    or " answered HTTP " in text
                ):
                    outcome = "failed"
                else:
                    outcome = "read" if tool == "web_fetch" else "found"
                first_line = " ".join(text.strip().splitlines()[0].split()) if text.strip() else ""
                rows.append(
                    {"tool": tool, "target": target, "outcome": outcome, "detail": first_line[:300]}
                )
    return rows
