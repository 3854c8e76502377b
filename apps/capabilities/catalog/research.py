"""Research: the public web — search it, read a page, operate a browser."""

from __future__ import annotations

from typing import Literal
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import ValidationInfo, field_validator

from ..conditions import When
from ..domains import normalize_host_list
from ..registry import KeyRequirement, ToolSpec, VoiceMode, register, tool
from ..schema import CapabilityConfig, setting

# --- web_research ----------------------------------------------------------------------------

PAID_SEARCH_METHODS = ("tavily", "brave", "exa")


class WebResearchConfig(CapabilityConfig):
    """Web search settings."""

    method: Literal["duckduckgo", "native", "tavily", "brave", "exa"] = setting(
        "duckduckgo",
        description=(
            "Which search service answers. The three paid ones need an API key from the "
            "organization's secrets. native is run by the model's provider, so it cannot be "
            "put behind an approval."
        ),
        labels={
            "duckduckgo": "DuckDuckGo — free, no account",
            "native": "The model provider's own search",
            "tavily": "Tavily — results summarized for a model",
            "brave": "Brave Search — an independent index",
            "exa": "Exa — search by meaning",
        },
    )
    max_results: int = setting(5, ge=1, le=10, description="Results per search; ignored by native.")


register(
    id="web_research",
    name="Web search",
    category="research",
    does="Lets the agent search the public web for current information.",
    examples=(
        "check today's exchange rate",
        "find the latest release notes of a library",
        "look up a company's headquarters address",
    ),
    needs="Nothing for DuckDuckGo; an API key for Tavily, Brave or Exa; a supporting model for native.",
    never="Reads the pages it finds — reading a page is Read web pages, a separate capability.",
    tools=(
        tool(
            "web_search",
            does="Search the public web for current information.",
            when=(
                "Use it for facts that change or that you may not know: news, prices, recent "
                "releases, who currently holds a role. It finds pages; it does not read them — "
                "call web_fetch on a result to read it. For the organization's own documents "
                "use search_documents."
            ),
            args={
                "query": "What to search for, as you would type it into a search engine. Required."
            },
            returns=(
                "Up to max_results results (5 unless configured, at most 10), each with title, "
                "URL and a snippet; with the native method, the provider's own answer and "
                "citations. No results returns a line saying so. A search service that is down "
                "is a retry request."
            ),
            provider_executed_when=When("method", "native"),
        ),
    ),
    scopes=("web:read",),
    key_requirement=KeyRequirement.CONDITIONAL,
    key_condition=When("method", *PAID_SEARCH_METHODS),
    key_note="for the paid methods (Tavily, Brave, Exa)",
    voice=VoiceMode.LIVE,
    voice_note="as is",
    recommended=True,
    config_model=WebResearchConfig,
)

# --- web_fetch -------------------------------------------------------------------------------


class WebFetchConfig(CapabilityConfig):
    """Read web pages settings."""

    method: Literal["local", "native", "auto"] = setting(
        "local",
        description=(
            "Who downloads the page. local is the only method that behaves the same on every "
            "model. native and auto are run by the model's provider (auto: where the model has "
            "it), so neither can be put behind an approval."
        ),
        labels={
            "local": "This deployment downloads the page",
            "native": "The model provider downloads it",
            "auto": "The provider where the model supports it, otherwise this deployment",
        },
    )
    max_content_chars: int = setting(
        50000,
        ge=1000,
        le=200000,
        advanced=True,
        description="A page or document's text is cut at this many characters; ignored by native.",
    )
    allowed_domains: list[str] | None = setting(
        None,
        description=(
            "Bare host names the agent may read, matched exactly (no wildcards, no implied "
            "subdomains). Empty means any host."
        ),
    )
    blocked_domains: list[str] | None = setting(
        None,
        description="Bare host names the agent may never read, matched exactly.",
    )

    @field_validator("allowed_domains")
    @classmethod
    def _allowed(cls, value: list[str] | None) -> list[str] | None:
        if value is None:
            return None
        if not value:
            # An empty allow list would silently deny everything.
            raise ValueError(
                "an empty allow list would deny every host; leave allowed_domains unset to allow any"
            )
        return normalize_host_list(value)

    @field_validator("blocked_domains")
    @classmethod
    def _blocked(cls, value: list[str] | None) -> list[str] | None:
        # "No host denied" written as [] says something true: read it as unset.
        if not value:
            return None
        return normalize_host_list(value)


register(
    id="web_fetch",
    name="Read web pages",
    category="research",
    does="Lets the agent read the full page behind a URL, as Markdown, including PDFs and office documents.",
    examples=(
        "read the article a search result points to",
        "summarize the terms of service at a link the person pasted",
        "extract the table from a public PDF report",
    ),
    needs="Nothing for local; a supporting model for native.",
    never=(
        "Reaches private, loopback, link-local or cloud-metadata addresses, even through a "
        "redirect; summarizes on its own."
    ),
    tools=(
        tool(
            "web_fetch",
            does="Read the full page at a URL, as Markdown.",
            when=(
                "Use it to read a page you already have the URL of — from the person, or from "
                "web_search. For a page that must be operated (a form, a login, a click), use "
                "browse_web."
            ),
            args={"url": "An absolute http(s) URL. Required."},
            returns=(
                "A web page (HTML, Markdown, JSON, plain text) as Markdown; an image as an "
                "image; a PDF or office document as its extracted text. Text is cut at "
                "max_content_chars (50,000 unless configured) and a PDF is read up to 2,000 "
                "pages, with a note naming the page where it stopped. A binary without "
                "readable text, a refused address, a 403 or a timeout is a retry request while "
                "the tool has a retry left, and the same message as a result after that."
            ),
            provider_executed_when=When("method", "native", "auto"),
        ),
    ),
    scopes=("web:fetch",),
    voice=VoiceMode.LIVE,
    voice_note="as is",
    recommended=True,
    config_model=WebFetchConfig,
)

# --- browser_use -----------------------------------------------------------------------------


class BrowserUseConfig(CapabilityConfig):
    """Web browser settings."""

    cdp_url: str | None = setting(
        None,
        description=(
            "A Chromium DevTools endpoint the operator runs. Its host must be in the "
            "deployment's BROWSER_CDP_ALLOWED_HOSTS. Empty uses the deployment's browser service."
        ),
    )
    allowed_domains: list[str] | None = setting(
        None,
        description=(
            "Hosts the browser may be on; patterns like *.example.com are allowed. Empty means "
            "the whole web. An address inside the deployment's network is refused unless its "
            "host is listed here."
        ),
    )
    max_steps: int = setting(
        50, ge=1, le=200, description="Steps per browse_web call, each one model request."
    )
    vision: bool = setting(
        False,
        description="Also send each step's screenshot to the model; the model must read images.",
    )
    candidate_cap: int = setting(
        60, ge=2, le=200, advanced=True, description="Elements that can be offered in one step."
    )
    preview: bool = setting(
        True, description="Show the browser's view in the chat while it navigates."
    )
    preview_width: int = setting(
        1024,
        ge=320,
        le=1920,
        advanced=True,
        description="Width of the view, and so of the frames.",
    )
    step_model_profile_id: str | None = setting(
        None,
        advanced=True,
        description=(
            "A model profile browse_web asks at each step instead of the agent's model — a "
            "cheaper model makes a long browse cheaper. Empty uses the agent's model."
        ),
    )
    connection: Literal["built_in", "proxy", "hosted"] = setting(
        "built_in",
        description="How the browser reaches the network.",
        labels={
            "built_in": "Built-in — the deployment's own browser and address",
            "proxy": "Through a proxy",
            "hosted": "A hosted browser service",
        },
    )
    proxy_url: str | None = setting(
        None,
        validate_default=True,
        description=(
            "With proxy: an http://, https:// or socks5:// address with host and port. The "
            "binding's secret, if any, is its username:password."
        ),
    )
    hosted_url: str | None = setting(
        None,
        validate_default=True,
        description="With hosted: the service's wss:// CDP address. The binding's secret is its key.",
    )
    hosted_key_param: str = setting(
        "apiKey",
        advanced=True,
        description="The query parameter the hosted browser expects its key in.",
    )
    timezone: str | None = setting(
        None,
        advanced=True,
        description="An IANA time zone the browser declares; match it to the proxy's region.",
    )
    locale: str | None = setting(
        None,
        advanced=True,
        description="A language tag such as pl-PL, sent as Accept-Language and navigator.language.",
    )

    @field_validator("proxy_url")
    @classmethod
    def _proxy(cls, value: str | None, info: ValidationInfo) -> str | None:
        if info.data.get("connection") != "proxy":
            return value
        if not value:
            raise ValueError("connection proxy needs a proxy_url")
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https", "socks5") or not parts.hostname:
            raise ValueError("must be http://, https:// or socks5:// with a host")
        try:
            port = parts.port
        except ValueError:
            port = None
        if port is None:
            raise ValueError("must name a port")
        return value

    @field_validator("hosted_url")
    @classmethod
    def _hosted(cls, value: str | None, info: ValidationInfo) -> str | None:
        if info.data.get("connection") == "hosted" and (
            not value or urlsplit(value).scheme != "wss"
        ):
            raise ValueError("connection hosted needs a wss:// hosted_url")
        return value

    @field_validator("timezone")
    @classmethod
    def _iana(cls, value: str | None) -> str | None:
        if value:
            try:
                ZoneInfo(value)
            except (ZoneInfoNotFoundError, ValueError):
                raise ValueError(f"{value!r} is not an IANA time zone") from None
        return value


_BROWSER_PAGE = (
    "the page after the action: its address, a numbered table of the elements a person could "
    "act on, and up to 4,000 characters of its visible text"
)


def _browser_step(tool_id: str, does: str, args: dict[str, str], *, acts: bool) -> ToolSpec:
    return tool(
        tool_id,
        does=does,
        when=(
            "One action per call on the same tab, chosen by you; the first browser_open opens "
            "the tab and a live view in the chat. Prefer these for a short task or one someone "
            "wants to watch; hand a long task to browse_web; just read a page with web_fetch."
        ),
        args=args,
        returns=(
            f"Text describing {_BROWSER_PAGE}. A page that blocks the browser, or a browser "
            "that does not respond, is said in the result."
        ),
        side_effecting=acts,
    )


register(
    id="browser_use",
    name="Web browser",
    category="research",
    does=(
        "Lets the agent operate a real Chromium browser step by step — fill a form, use a "
        "filter, sign in with details it has, click through several pages — while the chat "
        "shows the browser live and a person can take over."
    ),
    examples=(
        "fill in a supplier's order form",
        "find train times on a site whose results need clicks",
        "download an invoice from a portal it can sign in to",
    ),
    needs=(
        "A browser service run by the operator (BROWSER_SIGN_IN_CDP_URL, or a cdp_url whose host "
        "is in BROWSER_CDP_ALLOWED_HOSTS) and the agenticos[browser] extra; a key only for a "
        "hosted browser."
    ),
    never=(
        "Acts through a selector a page wrote — every action names a row the server built from "
        "the live page; keeps what was typed into a field."
    ),
    tools=(
        tool(
            "browse_web",
            does="Do a task in a real web browser, step by step.",
            when=(
                "Use it when a page must be operated — a form, a filter, a sign-in with details "
                "you have, results that need a click, a walk across several pages — and the "
                "task can be handed over whole. For a page that only has to be read, web_fetch "
                "is faster and has no side effects. For a short task someone wants to watch, "
                "drive the tab yourself with browser_open and friends."
            ),
            args={
                "task": "What to achieve, in plain words, with any details needed. Required.",
                "start_url": (
                    "Where to start. Omit it to continue the previous task in the same tab, "
                    "signed in, with the same memory; giving one starts a new task in that tab."
                ),
            },
            returns=(
                "One of four normal outcomes: done, with the answer; blocked by the page, with "
                "why; paused at max_steps (50 unless configured) with what was learned — call "
                "again without start_url to continue; or the browser does not respond, with who "
                "can fix it. When only a person can get past a page (a login without details, "
                "a captcha), it asks for one and waits up to ten minutes."
            ),
            side_effecting=True,
        ),
        _browser_step(
            "browser_open",
            "Open a URL in the agent's browser tab.",
            {"url": "An absolute http(s) URL. Required."},
            acts=False,
        ),
        _browser_step(
            "browser_read",
            "Read the current page of the agent's browser tab again.",
            {},
            acts=False,
        ),
        _browser_step(
            "browser_click",
            "Click an element of the current page by its row number.",
            {"element": "The row number from the page's element table. Required."},
            acts=True,
        ),
        _browser_step(
            "browser_type",
            "Type text into a field of the current page.",
            {
                "element": "The field's row number from the element table. Required.",
                "text": "What to type. Required. It reaches the page and is not stored anywhere.",
                "submit": "Press Enter afterwards; default false.",
            },
            acts=True,
        ),
        _browser_step(
            "browser_select",
            "Choose an option of a select element on the current page.",
            {
                "element": "The select's row number. Required.",
                "option": "The option's visible label or value. Required.",
            },
            acts=True,
        ),
        _browser_step(
            "browser_scroll",
            "Scroll the current page.",
            {"direction": "`down` (default) or `up`."},
            acts=False,
        ),
        _browser_step(
            "browser_back",
            "Go back to the previous page in the tab's history.",
            {},
            acts=False,
        ),
    ),
    scopes=("web:browse",),
    key_requirement=KeyRequirement.CONDITIONAL,
    key_condition=When("connection", "hosted"),
    key_note=(
        "only for a hosted browser (its key); a proxy may use the binding's secret as "
        "username:password. The browser itself comes with the agenticos[browser] extra."
    ),
    voice=VoiceMode.HAND_OFF,
    voice_note="handed off to the agent's text model",
    recommended=True,
    config_model=BrowserUseConfig,
)
