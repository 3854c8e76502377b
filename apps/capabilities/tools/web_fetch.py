"""web_fetch ("Read web pages"): the full page behind a URL, as Markdown.

The URL first passes the deployment's outbound check (apps/outbound) with no allow-list at all —
the model chose it, and a page it read may have told it to, so an internal server an operator
listed for a self-hosted model is as closed to it as any other. A malformed URL is an argument
error the model fixes, never an exception that ends the run.

The download is pydantic-ai's own ``WebFetchLocalTool`` over its SSRF-safe ``safe_download``
(``pydantic_ai/_ssrf.py``), not code of ours: it resolves the host once and pins the request to
that address (so a name that answered public a moment ago cannot answer 169.254.169.254 now),
re-validates every redirect hop — domain filters included — bounds the body while it streams, and
refuses the compressions that cannot be bounded that way. The URL comes from the model and is
resolved from inside the deployment, so checking it beforehand would not be enough on its own.
The library can be told to allow local addresses; nothing here exposes that.

What this module decides is what comes back:

- a page (HTML, Markdown, JSON, plain text): Markdown, cut at ``max_content_chars`` with a note;
- an image: the image, for a model that reads images (pydantic-ai replaces it by a note naming it
  for one that does not);
- a PDF or an office document: its extracted text (``apps.capabilities.documents``, the parser a
  chat attachment goes through too), cut the same way;
- a binary without readable text: a retry naming what arrived;
- a refused address (private, loopback, link-local, cloud metadata), a host outside the domain
  filters, a 403, a time-out: a retry that says what happened and what to do instead — never an
  empty page, which the model would answer around without saying it had to.

Every failure is a retry only while the tool has an attempt left (``failures.budgeted``):
pydantic-ai counts retries per tool, not per URL, so the second site that turned the agent away
would otherwise end the run; on the last attempt the same message is the tool's result and the
model moves on to another source.

``allowed_domains`` / ``blocked_domains`` are stored in one DNS spelling (``domains.py``); the
library is handed every equivalent spelling (``host_spellings``) so an exact match has no hole.

``method``: ``local`` is this toolset. ``native`` and ``auto`` are pydantic-ai's ``WebFetch``
capability (:func:`web_fetch_capabilities`): native only, or native where the model has it and this
same local tool everywhere else — one of the two is offered, never both.
"""

from __future__ import annotations

import re
from functools import partial
from typing import Any
from urllib.parse import urlsplit

import anyio.to_thread
from pydantic_ai import RunContext
from pydantic_ai.capabilities import WebFetch
from pydantic_ai.common_tools.web_fetch import WebFetchLocalTool
from pydantic_ai.exceptions import ModelRetry
from pydantic_ai.messages import BinaryContent, ToolReturn
from pydantic_ai.native_tools import SUPPORTED_NATIVE_TOOLS, WebFetchTool

from apps.outbound.addresses import NOBODY, Refused, check_url, parse

from .. import documents
from ..domains import host_spellings
from ._toolsets import declared_toolset, parsed_config
from .failures import RetryRequest, WrongArguments, budgeted
from .sources import source, sources_metadata

CAPABILITY_ID = "web_fetch"
TOOLSET_ID = "web_fetch"
FETCH_TIMEOUT_SECONDS = 30
# The body is refused past this size while it streams (the library's own default).
MAX_DOWNLOAD_BYTES = 50 * 1024 * 1024
# An image is sent to the model as is, and kept in the run's transcript: past this size (the
# smallest per-image limit among the providers) it is a retry, not a request the provider refuses.
IMAGE_MAX_BYTES = 5 * 1024 * 1024

_ADDRESS_IN_PARENS = re.compile(r"\(([^()]*)\)")


class FetchRefused(RetryRequest):
    """The address or host may not be read; a retry so the model picks another source."""


class FetchFailed(RetryRequest):
    """The site did not give the page (a status, a time-out, a body that cannot be read)."""


def filter_hosts(hosts: list[str] | None) -> list[str] | None:
    """Every spelling of every stored host, for the library's exact-match filter."""
    if hosts is None:
        return None
    return sorted({spelling for host in hosts for spelling in host_spellings(host)})


def local_fetcher(config) -> WebFetchLocalTool:
    return WebFetchLocalTool(
        # Cut here, not in the library, so pages and documents carry one note.
        max_content_length=None,
        allow_local_urls=False,
        timeout=FETCH_TIMEOUT_SECONDS,
        max_download_bytes=MAX_DOWNLOAD_BYTES,
        allowed_domains=filter_hosts(config.allowed_domains),
        blocked_domains=filter_hosts(config.blocked_domains),
    )


def cut(text: str, max_chars: int) -> str:
    if len(text) <= max_chars:
        return text
    return text[:max_chars] + f"\n\n[Cut at {max_chars:,} characters of {len(text):,}.]"


def refusal_sentence(url: str, refused: Refused) -> RetryRequest:
    """The outbound check's refusal of ``url``, said so that the model knows what to do next."""
    if refused.kind == "metadata":
        return FetchRefused(
            f"Refused to read {url}: it leads to a cloud metadata address ({refused.address}), "
            "which this deployment never reads, directly or through a redirect. Use a public "
            "source instead."
        )
    if refused.kind == "private":
        return FetchRefused(
            f"Refused to read {url}: it leads to a private, loopback or link-local address "
            f"({refused.address}), which this deployment never reads, directly or through a "
            "redirect. Use a public URL instead."
        )
    if refused.kind == "unresolvable":
        return FetchFailed(
            f"Could not read {url}: the host {refused.host} does not resolve. Check the address."
        )
    if refused.kind == "credentials":
        return WrongArguments(
            f"Could not read {url}: write the URL without a user name or password."
        )
    return WrongArguments(f"{url!r} is not an absolute http(s) URL: write it as https://host/path.")


def failure_sentence(url: str, retry: ModelRetry, config) -> RetryRequest:
    """The library's failure, said so that the model knows what happened and what to do next."""
    cause = retry.__cause__
    text = str(cause) if cause is not None else retry.message
    host = urlsplit(url).hostname or url
    found = _ADDRESS_IN_PARENS.search(text)
    address = found.group(1) if found else ""
    if "cloud metadata" in text:
        return FetchRefused(
            f"Refused to read {url}: it leads to a cloud metadata address ({address}), which this "
            "deployment never reads, directly or through a redirect. Use a public source instead."
        )
    if "private/internal IP address" in text:
        return FetchRefused(
            f"Refused to read {url}: it leads to a private, loopback or link-local address "
            f"({address}), which this deployment never reads, directly or through a redirect. "
            "Use a public URL instead."
        )
    if "not in the allowed domains list" in text:
        allowed = ", ".join(config.allowed_domains or ())
        return FetchRefused(
            f"Refused to read {url}: this agent may only read pages on {allowed}"
            " (a redirect counts too). Read a page on one of those hosts, or answer without it."
        )
    if text.startswith("Domain ") and text.endswith("is blocked."):
        return FetchRefused(
            f"Refused to read {url}: a host it leads to is on this agent's blocked list. Use another source."
        )
    if "DNS resolution failed" in text:
        return FetchFailed(
            f"Could not read {url}: the host {host} does not resolve. Check the address."
        )
    if "protocol" in text and "not allowed" in text:
        return WrongArguments(f"Could not read {url}: only http:// and https:// URLs can be read.")
    if "Too many redirects" in text:
        return FetchFailed(
            f"Could not read {url}: it redirects too many times. Use another source."
        )
    if "exceeds the maximum size" in text:
        return FetchFailed(
            f"Could not read {url}: it is larger than the {MAX_DOWNLOAD_BYTES:,} bytes this deployment "
            "downloads. Use a smaller source."
        )
    if "content-encoding" in text:
        return FetchFailed(
            f"Could not read {url}: the site compresses it in a way that cannot be read safely. Use another source."
        )
    response = getattr(cause, "response", None)
    if response is not None and getattr(response, "status_code", None):
        reason = getattr(response, "reason_phrase", "") or ""
        return FetchFailed(
            f"Could not read {url}: the site answered HTTP {response.status_code} {reason}".rstrip()
            + ". Try another source."
        )
    # The library re-raises transport errors at family level; the specific one is further down.
    chain: list[BaseException] = []
    link = cause
    while link is not None and len(chain) < 5:
        chain.append(link)
        link = link.__cause__
    if any("Timeout" in type(e).__name__ for e in chain) or "timed out" in text.lower():
        return FetchFailed(
            f"Could not read {url}: the site did not answer in time. Try again later or another source."
        )
    if any("Connect" in type(e).__name__ for e in chain):
        return FetchFailed(
            f"Could not read {url}: the site could not be reached. Try again later or another source."
        )
    detail = " ".join(text.split()) or "the request failed"
    return FetchFailed(f"Could not read {url}: {detail}.")


def page_return(url: str, title: str, content: str, max_chars: int) -> ToolReturn:
    heading = f"# {' '.join(title.split())}\n\n" if title.strip() else ""
    body = cut(content, max_chars)
    return ToolReturn(
        return_value=f"{heading}Source: {url}\n\n{body}",
        metadata=sources_metadata([source(url, title)]),
    )


def binary_return(url: str, content: BinaryContent, max_chars: int) -> ToolReturn:
    media_type = (content.media_type or "application/octet-stream").lower()
    data = content.data
    if media_type.startswith("image/"):
        if len(data) > IMAGE_MAX_BYTES:
            raise FetchFailed(
                f"Could not read {url}: it is an image of {len(data):,} bytes, larger than the "
                f"{IMAGE_MAX_BYTES:,} a model is sent. Use a smaller image or a page about it."
            )
        return ToolReturn(
            return_value=[f"The image at {url} ({media_type}, {len(data):,} bytes):", content],
            metadata=sources_metadata([source(url)]),
        )
    kind = documents.sniff_document_type(data, media_type)
    if kind is None:
        raise FetchFailed(
            f"Could not read {url}: it is {media_type}, {len(data):,} bytes of binary data with no "
            "readable text (an archive, a program, or media). Use a page that describes it instead."
        )
    try:
        extracted = documents.extract_text(data, kind, max_chars=max_chars)
    except documents.Unreadable as exc:
        raise FetchFailed(
            f"Could not read {url}: it is {exc}, with no readable text. Use another source."
        ) from exc
    title = f"{extracted.kind} at {url}"
    parts = [cut(extracted.text, max_chars)] if extracted.text else []
    if extracted.note:
        parts.append(extracted.note)
    return ToolReturn(
        return_value=f"# {title}\n\nSource: {url}\n\n" + "\n\n".join(parts),
        metadata=sources_metadata([source(url, extracted.kind)]),
    )


def local_web_fetch(config):
    """The tool function offered to the model for a parsed ``config``."""
    fetcher = local_fetcher(config)
    max_chars = config.max_content_chars

    @budgeted
    async def web_fetch(ctx: RunContext[Any], url: str = "") -> Any:
        url = (url or "").strip()
        if not url:
            raise WrongArguments(
                "url is empty: pass an absolute http(s) URL, e.g. https://example.com/page."
            )
        try:
            parse(url)
        except Refused:
            # Malformed (``http://[x]/``) or not http(s): the model wrote it, the model fixes it.
            raise WrongArguments(
                f"{url!r} is not an absolute http(s) URL: write it as https://host/path."
            ) from None
        try:
            await anyio.to_thread.run_sync(partial(check_url, url, allow=NOBODY))
        except Refused as refused:
            raise refusal_sentence(url, refused) from None
        try:
            result = await fetcher(url)
        except ModelRetry as retry:
            raise failure_sentence(url, retry, config) from retry
        if isinstance(result, BinaryContent):
            # Parsing a long PDF is CPU-bound: off the event loop, which other runs share.
            return await anyio.to_thread.run_sync(binary_return, url, result, max_chars)
        return page_return(result["url"], result["title"], result["content"], max_chars)

    return web_fetch


def _local_toolset(binding):
    config = parsed_config(CAPABILITY_ID, binding)
    return declared_toolset(
        CAPABILITY_ID, binding, {"web_fetch": local_web_fetch(config)}, toolset_id=TOOLSET_ID
    )


def build_web_fetch_toolset(binding, context):
    config = parsed_config(CAPABILITY_ID, binding)
    if config.method != "local":
        return None  # native and auto come as a pydantic-ai capability (web_fetch_capabilities)
    return _local_toolset(binding)


def web_fetch_capabilities(binding, resources) -> list[Any]:
    """``native``: the provider's fetch only (pydantic-ai refuses a model without one). ``auto``:
    the provider's where the model has it, this deployment's local tool everywhere else."""
    config = parsed_config(CAPABILITY_ID, binding)
    if config.method == "local":
        return []
    local = _local_toolset(binding) if config.method == "auto" else False
    return [
        WebFetch(
            native=True,
            local=local,
            allowed_domains=list(config.allowed_domains) if config.allowed_domains else None,
            blocked_domains=list(config.blocked_domains) if config.blocked_domains else None,
        )
    ]


def model_runs_native(model, native_tool: type) -> bool:
    """Whether ``model`` (a pydantic-ai model) can run ``native_tool`` on its provider's side."""
    profile = getattr(model, "profile", None) or {}
    supported = profile.get("supported_native_tools", SUPPORTED_NATIVE_TOOLS)
    return issubclass(native_tool, tuple(supported)) if supported else False


def web_fetch_native_refusal(binding, model) -> str | None:
    """Why a run with ``method: native`` cannot assemble on ``model`` (None when it can)."""
    config = parsed_config(CAPABILITY_ID, binding)
    if config.method != "native" or model_runs_native(model, WebFetchTool):
        return None
    return (
        "Read web pages is set to the model provider's own fetch (method native), which this "
        "agent's model does not have: set method to local or auto, or pick a model that has it."
    )
