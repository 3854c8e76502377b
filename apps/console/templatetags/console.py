"""Template helpers every console page may load: ``{% load console %}``.

``markdown``: an agent's answer rendered as Markdown on the server — markdown-it-py (CommonMark
plus tables and strikethrough; raw HTML in the text is shown as text, never interpreted), then
nh3 (a sanitizer; allow-list of tags and attributes, links get ``rel="noopener noreferrer
nofollow"``). The chat uses it for live turns and reloaded ones alike, so both read the same.
"""

from __future__ import annotations

import json
import re
from decimal import Decimal, InvalidOperation
from functools import lru_cache

import nh3
from django import template
from django.utils.safestring import mark_safe
from markdown_it import MarkdownIt

from apps.spend.charts import usd

register = template.Library()

_TAGS = {
    "p", "br", "strong", "em", "del", "code", "pre", "blockquote", "hr",
    "ul", "ol", "li", "a", "h1", "h2", "h3", "h4", "h5", "h6",
    "table", "thead", "tbody", "tr", "th", "td",
}  # fmt: skip
# No style attributes: the console's Content-Security-Policy applies no inline style.
_ATTRIBUTES = {"a": {"href", "title"}, "ol": {"start"}}


@lru_cache(maxsize=1)
def _parser() -> MarkdownIt:
    return MarkdownIt("commonmark", {"html": False, "linkify": False, "breaks": True}).enable(
        ["table", "strikethrough"]
    )


def render_markdown(text: str) -> str:
    html = _parser().render(text or "")
    return nh3.clean(
        html,
        tags=_TAGS,
        attributes=_ATTRIBUTES,
        url_schemes={"http", "https", "mailto"},
        link_rel="noopener noreferrer nofollow",
    )


@register.filter(name="markdown")
def markdown_filter(text: str) -> str:
    # Safe: nh3 leaves only the allow-listed tags and attributes above.
    return mark_safe(render_markdown(text))  # noqa: S308


@register.filter
def money(value, digits: int | None = None) -> str:
    """One money format, the Spend page's (``apps.spend.charts.usd``): dollars to the cent on
    totals, a sub-cent amount with four places so it never reads as free; ``digits`` only where a
    per-request cost needs more."""
    if value is None or value == "":
        return "—"
    try:
        amount = Decimal(str(value))
    except InvalidOperation:
        return str(value)
    if digits is None:
        return usd(amount)
    return f"${amount:,.{int(digits)}f}"


_COMMAND = re.compile(r"^\s*/(?P<verb>call|steps|ask)\b\s*(?P<rest>.*)$", re.DOTALL)
_CALL = re.compile(r"^(?P<tool>[A-Za-z0-9_\-]+)\s*(?P<args>.*)$", re.DOTALL)


@register.filter
def chat_title(title: str) -> str:
    """A conversation's title without the offline model's commands: ``/call add_task {json}``
    reads "add_task: Email the customer", ``/steps 3`` "3 steps", ``/ask Go on?`` "Go on?"."""
    title = (title or "").strip()
    match = _COMMAND.match(title)
    if not match:
        return title or "Untitled"
    verb, rest = match["verb"], match["rest"].strip()
    if verb == "steps":
        return f"{rest.split()[0] if rest else 'Some'} steps"
    if verb == "ask":
        return rest or "A question"
    call = _CALL.match(rest.splitlines()[0] if rest else "")
    if not call:
        return "A tool call"
    try:
        args = json.loads(call["args"]) if call["args"].strip() else {}
    except ValueError:
        args = {}
    values = (
        [str(v) for v in args.values() if isinstance(v, str | int | float)]
        if isinstance(args, dict)
        else []
    )
    return f"{call['tool']}: {values[0]}" if values else call["tool"]


@register.filter
def pretty_json(value) -> str:
    """A JSON value as indented JSON (details, arguments), never a Python repr."""
    if value in (None, "", {}, []):
        return ""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return value
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True, default=str)


@register.filter
def words(value) -> str:
    """A stored state as words: ``awaiting_approval`` → "Awaiting approval"."""
    text = str(value or "").replace("_", " ").strip()
    return text[:1].upper() + text[1:]


@register.filter
def provider_label(value) -> str:
    """A stored provider as its name: ``openai_compatible`` → "OpenAI-compatible server"."""
    from apps.agents.models import Provider

    if value in (None, "", "none"):
        return "None (refused before a request)"
    return dict(Provider.choices).get(value, str(value))
