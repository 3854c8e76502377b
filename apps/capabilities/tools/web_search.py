"""web_research ("Web search"): ``web_search`` finds pages on the public web; it does not read them.

One tool whatever the method, with one argument (``query``), so the model's instructions and the
Builder's approval box do not change when an author switches provider. Each method runs through the
library that speaks its API:

=============  =================================================================================
``method``     who answers
=============  =================================================================================
duckduckgo     pydantic-ai's ``DuckDuckGoSearchTool`` over ``ddgs`` with its DuckDuckGo HTML engine
               only (ddgs' default "auto" backend would spray the query over a dozen engines). Free,
               no account.
tavily         pydantic-ai's ``TavilySearchTool`` over ``tavily-python``'s ``AsyncTavilyClient``
brave          Brave's web search API over httpx (no pydantic-ai tool exists for it)
exa            pydantic-ai's ``ExaSearchTool`` over ``exa-py``'s ``AsyncExa``
native         the model provider's own search: pydantic-ai's ``WebSearch`` capability
               (:func:`web_search_capabilities`), refused by pydantic-ai on a model without it
=============  =================================================================================

The three paid methods take the binding's vault key (``ToolsetContext.secret_value``; publish
refuses them without one). Results come back as a numbered Markdown list — title, URL, snippet —
and as sources in the return's metadata (``sources.py``) for the console's clickable cards. No
results is bad news returned as text; a service that is down or times out is a retry while the
tool has an attempt left (``failures.budgeted``); a key the service refuses is said as text,
because calling again with the same key cannot help.

Where each service lives is :data:`ENDPOINTS`, a module constant and nothing else: no spec, binding
or setting can point a search at another host. Tests replace an entry to reach a fake of the API on
127.0.0.1.
"""

from __future__ import annotations

import functools
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
from pydantic_ai import RunContext
from pydantic_ai.capabilities import WebSearch
from pydantic_ai.messages import ToolReturn
from pydantic_ai.native_tools import WebSearchTool

from ._toolsets import declared_toolset, parsed_config
from .failures import TransientFault, WrongArguments, budgeted
from .sources import source, sources_metadata
from .web_fetch import model_runs_native

CAPABILITY_ID = "web_research"
TOOLSET_ID = "web_research"
SEARCH_TIMEOUT_SECONDS = 20
SNIPPET_CHARS = 400

PROVIDER_NAMES = {
    "duckduckgo": "DuckDuckGo",
    "tavily": "Tavily",
    "brave": "Brave Search",
    "exa": "Exa",
}

# Where each method's service answers. Only tests change these (to a fake on 127.0.0.1).
ENDPOINTS: dict[str, str] = {
    "duckduckgo": "https://html.duckduckgo.com/html/",
    "tavily": "https://api.tavily.com",
    "brave": "https://api.search.brave.com/res/v1/web/search",
    "exa": "https://api.exa.ai",
}


class KeyRefused(Exception):
    """The service refused the binding's key: said as text, a retry cannot fix it."""


def _snippet(text: str | None) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= SNIPPET_CHARS else text[: SNIPPET_CHARS - 1] + "…"


def _hit(url: str, title: str, snippet: str | None) -> dict[str, str]:
    return {**source(url, title), "snippet": _snippet(snippet)}


# --- the providers ---------------------------------------------------------------------------


def _duckduckgo_client():
    """A ``DDGS`` whose DuckDuckGo engine posts to :data:`ENDPOINTS` and that uses that engine only.

    (``ddgs.DDGS`` is a lazy proxy whose instances are never a subclass: the class is imported from
    ``ddgs.ddgs``.) The engine keeps ddgs' own proxy setting (``DDGS_PROXY``), which an operator may
    use to send searches through their egress proxy."""
    from ddgs.ddgs import DDGS
    from ddgs.engines.duckduckgo import Duckduckgo

    class DuckDuckGoOnly(DDGS):
        def text(self, query: str, **kwargs: Any) -> list[dict[str, Any]]:
            engine = Duckduckgo(proxy=self._proxy, timeout=SEARCH_TIMEOUT_SECONDS)
            engine.search_url = ENDPOINTS["duckduckgo"]
            self._engines_cache[Duckduckgo] = engine
            return super().text(query, backend="duckduckgo", **kwargs)

    return DuckDuckGoOnly(timeout=SEARCH_TIMEOUT_SECONDS)


async def search_duckduckgo(
    query: str, max_results: int, api_key: str | None
) -> list[dict[str, str]]:
    from ddgs.exceptions import DDGSException
    from pydantic_ai.common_tools.duckduckgo import DuckDuckGoSearchTool

    tool = DuckDuckGoSearchTool(client=_duckduckgo_client(), max_results=max_results)
    try:
        results = await tool(query)
    except DDGSException as exc:
        # ddgs says "No results found." both for an empty page and for a page it could not get
        # (a 202 rate-limit page, a 5xx): an honest empty answer is the one it names.
        if "No results found" in str(exc):
            return []
        raise TransientFault(f"DuckDuckGo did not answer ({exc}). Try the search again.") from exc
    return [_hit(_unwrap_duckduckgo(r["href"]), r["title"], r["body"]) for r in results]


def _unwrap_duckduckgo(href: str) -> str:
    """DuckDuckGo's HTML page may link a result through its redirector
    (``//duckduckgo.com/l/?uddg=<target>&rut=…``): the source is the target."""
    parts = urlsplit(href if "://" in href else f"https:{href}" if href.startswith("//") else href)
    if (parts.hostname or "").endswith("duckduckgo.com") and parts.path == "/l/":
        target = parse_qs(parts.query).get("uddg", [""])[0]
        if target.startswith(("http://", "https://")):
            return target
    return href


async def search_tavily(query: str, max_results: int, api_key: str | None) -> list[dict[str, str]]:
    from pydantic_ai.common_tools.tavily import TavilySearchTool
    from tavily import AsyncTavilyClient
    from tavily.errors import (
        BadRequestError,
        ForbiddenError,
        InvalidAPIKeyError,
        MissingAPIKeyError,
        UsageLimitExceededError,
    )
    from tavily.errors import TimeoutError as TavilyTimeout

    async with AsyncTavilyClient(api_key, api_base_url=ENDPOINTS["tavily"]) as client:
        tool = TavilySearchTool(client=client, max_results=max_results)
        try:
            results = await tool(query)
        except (InvalidAPIKeyError, MissingAPIKeyError, ForbiddenError) as exc:
            raise KeyRefused(f"Tavily refused the agent's API key ({exc})") from exc
        except UsageLimitExceededError as exc:
            raise KeyRefused(f"Tavily says the key's usage limit is reached ({exc})") from exc
        except BadRequestError as exc:
            raise WrongArguments(
                f"Tavily did not accept the query ({exc}). Write a shorter, plainer query."
            ) from exc
        except TavilyTimeout as exc:
            raise TransientFault("Tavily did not answer in time. Try the search again.") from exc
    return [_hit(r["url"], r["title"], r["content"]) for r in results]


async def search_brave(query: str, max_results: int, api_key: str | None) -> list[dict[str, str]]:
    async with httpx.AsyncClient(timeout=SEARCH_TIMEOUT_SECONDS) as client:
        response = await client.get(
            ENDPOINTS["brave"],
            params={"q": query, "count": max_results},
            headers={"Accept": "application/json", "X-Subscription-Token": api_key or ""},
        )
    if response.status_code in (401, 403):
        raise KeyRefused(f"Brave Search refused the agent's API key (HTTP {response.status_code})")
    if response.status_code == 429:
        raise TransientFault(
            "Brave Search says too many searches were made just now (HTTP 429). Try again."
        )
    response.raise_for_status()
    payload = response.json()
    results = ((payload or {}).get("web") or {}).get("results") or []
    return [
        _hit(r.get("url", ""), r.get("title", ""), r.get("description"))
        for r in results[:max_results]
        if isinstance(r, dict) and r.get("url")
    ]


async def search_exa(query: str, max_results: int, api_key: str | None) -> list[dict[str, str]]:
    from exa_py import AsyncExa
    from pydantic_ai.common_tools.exa import ExaSearchTool

    client = AsyncExa(api_key, api_base=ENDPOINTS["exa"], timeout=SEARCH_TIMEOUT_SECONDS)
    try:
        tool = ExaSearchTool(client=client, num_results=max_results, max_characters=SNIPPET_CHARS)
        try:
            results = await tool(query)
        except ValueError as exc:
            # exa-py raises ValueError("Request failed with status code N: …") for an HTTP error.
            text = str(exc)
            if "status code 401" in text or "status code 403" in text:
                raise KeyRefused(f"Exa refused the agent's API key ({_snippet(text)})") from exc
            raise TransientFault(
                f"Exa did not answer ({_snippet(text)}). Try the search again."
            ) from exc
    finally:
        await client.aclose()
    return [_hit(r["url"], r["title"], r["text"]) for r in results]


PROVIDERS = {
    "duckduckgo": search_duckduckgo,
    "tavily": search_tavily,
    "brave": search_brave,
    "exa": search_exa,
}


# --- the tool --------------------------------------------------------------------------------


def results_text(query: str, provider: str, hits: list[dict[str, str]]) -> str:
    if not hits:
        return f"No results for {query!r} on {provider}. Try other words, or a broader query."
    lines = [f"{len(hits)} result{'s' if len(hits) != 1 else ''} for {query!r} from {provider}:"]
    for number, hit in enumerate(hits, start=1):
        lines.append(f"{number}. [{hit['title']}]({hit['url']})")
        if hit["snippet"]:
            lines.append(f"   {hit['snippet']}")
    lines.append("These are search results, not the pages: call web_fetch on a URL to read it.")
    return "\n".join(lines)


def web_search_function(method: str, max_results: int, api_key: str | None):
    provider = PROVIDER_NAMES[method]
    run_search = functools.partial(PROVIDERS[method], max_results=max_results, api_key=api_key)

    @budgeted
    async def web_search(ctx: RunContext[Any], query: str = "") -> Any:
        query = " ".join((query or "").split())
        if not query:
            raise WrongArguments(
                "query is empty: pass the words to search for, e.g. 'euro dollar exchange rate today'."
            )
        try:
            hits = await run_search(query)
        except KeyRefused as exc:
            return f"{exc}. The search was not made; the agent's owner must check the key in the binding's secret."
        except TransientFault:
            raise
        except httpx.HTTPStatusError as exc:
            raise TransientFault(
                f"{provider} answered HTTP {exc.response.status_code}. Try the search again."
            ) from exc
        except (httpx.HTTPError, OSError, TimeoutError) as exc:
            raise TransientFault(
                f"{provider} could not be reached ({type(exc).__name__}). Try the search again."
            ) from exc
        hits = hits[:max_results]
        return ToolReturn(
            return_value=results_text(query, provider, hits),
            metadata=sources_metadata([{k: h[k] for k in ("url", "title", "host")} for h in hits]),
        )

    return web_search


def build_web_search_toolset(binding, context):
    config = parsed_config(CAPABILITY_ID, binding)
    if config.method == "native":
        return None  # the provider's own search comes as a pydantic-ai capability
    function = web_search_function(config.method, config.max_results, context.secret_value)
    return declared_toolset(CAPABILITY_ID, binding, {"web_search": function}, toolset_id=TOOLSET_ID)


def web_search_capabilities(binding, resources) -> list[Any]:
    config = parsed_config(CAPABILITY_ID, binding)
    if config.method != "native":
        return []
    return [WebSearch(native=True, local=False)]


def web_search_native_refusal(binding, model) -> str | None:
    """Why a run with ``method: native`` cannot assemble on ``model`` (None when it can)."""
    config = parsed_config(CAPABILITY_ID, binding)
    if config.method != "native" or model_runs_native(model, WebSearchTool):
        return None
    return (
        "Web search is set to the model provider's own search (method native), which this "
        "agent's model does not have: choose DuckDuckGo or a paid method, or pick a model that has it."
    )
