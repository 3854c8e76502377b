"""The one shape a tool description reaches the model in.

Seed 000, "Qué le dice una herramienta al modelo": every tool carries four things — what it
does, when to use it (and when to use something else), what each argument means with its
default and limit, and what comes back (the shape, what a failure looks like, where the result
is a truncated slice). They reach the model in pydantic-ai's own shape: the prose inside
``<summary>``, the return description inside ``<returns>``. A tool pydantic-ai builds from a
docstring gets this for free (``pydantic_ai._griffe.doc_descriptions``); a tool that comes from
a library is registered with an explicit description, so its text is rendered here the way the
framework would have rendered it. Two conventions in one tool list is one more thing for the
model to reconcile.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from textwrap import dedent

# Exactly what pydantic_ai._griffe renders for a docstring with a ``Returns:`` section
# (the optional <type> tag included, so a framework-built tool also passes the check).
_TOOL_TEXT_RE = re.compile(
    r"\A<summary>(?P<summary>.+?)</summary>\n"
    r"<returns>\n(?:<type>[^<]*</type>\n)?<description>(?P<returns>.+?)</description>\n</returns>\Z",
    re.DOTALL,
)

NO_ARGUMENTS = "Takes no arguments."


def _clean(text: str) -> str:
    return dedent(text).strip()


def render_tool_text(summary: str, returns: str) -> str:
    """Render ``summary`` and ``returns`` the way pydantic-ai renders a docstring."""
    summary, returns = _clean(summary), _clean(returns)
    if not summary or not returns:
        raise ValueError("a tool description needs both a summary and a returns description")
    return (
        f"<summary>{summary}</summary>\n<returns>\n<description>{returns}</description>\n</returns>"
    )


def compose_summary(*, does: str, when: str, args: Mapping[str, str]) -> str:
    """The three prose parts of a tool description: what, when, and each argument."""
    parts = [_clean(does), _clean(when)]
    if args:
        lines = ["Arguments:"]
        lines += [f"- `{name}`: {_clean(text)}" for name, text in args.items()]
        parts.append("\n".join(lines))
    else:
        parts.append(NO_ARGUMENTS)
    return "\n\n".join(parts)


def has_tool_text_shape(text: str) -> bool:
    """True when ``text`` is ``<summary>…</summary>`` followed by ``<returns>…</returns>``."""
    return bool(_TOOL_TEXT_RE.match(text or ""))


def split_tool_text(text: str) -> tuple[str, str]:
    """Return ``(summary, returns)`` of a well-shaped description; ``ValueError`` otherwise."""
    match = _TOOL_TEXT_RE.match(text or "")
    if match is None:
        raise ValueError("not a <summary>/<returns> tool description")
    return match["summary"], match["returns"]
