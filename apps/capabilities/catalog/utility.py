"""Utility: how a run is carried — tool discovery, the date, guardrails, long histories, large
outputs — and published pages. Five of these only tune a run and are folded under Advanced."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import field_validator, model_validator

from ..registry import VoiceMode, register, tool
from ..schema import CapabilityConfig, setting

# --- tool_search -----------------------------------------------------------------------------


class ToolSearchConfig(CapabilityConfig):
    """Tool search settings."""

    strategy: Literal["auto", "keywords", "bm25", "regex"] = setting(
        "auto",
        description=(
            "auto uses the provider's native tool search where it has one and local keywords "
            "elsewhere; bm25 and regex force Anthropic's native algorithm and fail on other providers."
        ),
        labels={
            "auto": "Automatic — native where available, keywords elsewhere",
            "keywords": "Keywords — always local",
            "bm25": "BM25 — Anthropic native only",
            "regex": "Regex — Anthropic native only",
        },
    )
    max_results: int = setting(
        10, ge=1, le=50, description="Tools returned per search; ignored by native search."
    )


register(
    id="tool_search",
    name="Tool search",
    category="utility",
    does=(
        "Lets the agent find a tool inside a large set instead of carrying every tool's schema "
        "in every request — it defers the tools of connected MCP servers until searched for."
    ),
    examples=(
        "an agent bound to five MCP servers with 80 tools between them",
        "keep per-turn cost down when most tools are rarely used",
    ),
    needs="MCP connections with deferred tools; on its own it declares nothing.",
    never="Hides the registry's own tools, or changes a tool's identity (approvals and renames still apply).",
    tools=(),
    voice=VoiceMode.NEVER,
    voice_note="dropped: a call gets its MCP tools directly, fixed when it connects",
    advanced=True,
    config_model=ToolSearchConfig,
)

# --- clock -----------------------------------------------------------------------------------


class ClockConfig(CapabilityConfig):
    """Date and time settings."""

    timezone: str = setting("UTC", description="Any IANA name, e.g. Europe/Warsaw.")

    @field_validator("timezone")
    @classmethod
    def _iana(cls, value: str) -> str:
        from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(
                f"{value!r} is not an IANA time zone name (e.g. Europe/Warsaw)"
            ) from None
        return value


register(
    id="clock",
    name="Date and time",
    category="utility",
    does=(
        "Puts the current date and time in the agent's instructions, so it stops guessing them "
        "from its training cut-off."
    ),
    examples=("answer “what's due this week?”", "reason correctly about “this quarter”"),
    needs="Nothing; choose the time zone the agent's people live in.",
    never="Adds a tool or a model call.",
    tools=(),
    voice=VoiceMode.LIVE,
    voice_note="as is",
    recommended=True,
    config_model=ClockConfig,
    # Built: apps/capabilities/tools/.
)

# --- guardrails ------------------------------------------------------------------------------

_REGION_SPLIT = re.compile(r"[,\n]")
MAX_PHONE_REGIONS = 16


def parse_phone_regions(value: str) -> list[str]:
    """The ISO 3166 codes of ``phone_regions``; ``ValueError`` naming an unknown one."""
    import phonenumbers

    codes = [c.strip().upper() for c in _REGION_SPLIT.split(value) if c.strip()]
    unknown = [c for c in codes if c not in phonenumbers.SUPPORTED_REGIONS]
    if unknown:
        hint = " (the United Kingdom is GB)" if "UK" in unknown else ""
        raise ValueError(f"unknown region code(s): {', '.join(unknown)}{hint}")
    if len(codes) > MAX_PHONE_REGIONS:
        raise ValueError(f"at most {MAX_PHONE_REGIONS} regions; {len(codes)} given")
    return codes


_EDGES = {
    "in": "the user's prompt",
    "out": "the agent's answer",
    "tool": "what a tool returned, before the model reads it",
    "args": "what the agent passes to a tool, before it runs",
}


def _redact(kind: str, edge: str) -> bool:
    what = {
        "secrets": "API keys, tokens, JWTs and PEM blocks",
        "pii": "e-mails, phone numbers, IBANs, card numbers and US SSNs",
    }[kind]
    return setting(False, description=f"Scrub {what} from {_EDGES[edge]}.")


def _block(edge: str) -> str:
    return setting(
        "",
        description=(
            f"Terms, separated by commas or new lines; a match in {_EDGES[edge]} ends the run "
            "as guardrail_blocked."
        ),
    )


class GuardrailsConfig(CapabilityConfig):
    """Guardrail settings: four edges, each can redact or block.
    Every edge is off by default; enabled with no edge configured it attaches nothing."""

    redact_secrets_in: bool = _redact("secrets", "in")
    redact_pii_in: bool = _redact("pii", "in")
    blocked_keywords_in: str = _block("in")
    redact_secrets_out: bool = _redact("secrets", "out")
    redact_pii_out: bool = _redact("pii", "out")
    blocked_keywords_out: str = _block("out")
    redact_secrets_tool: bool = _redact("secrets", "tool")
    redact_pii_tool: bool = _redact("pii", "tool")
    blocked_keywords_tool: str = _block("tool")
    redact_secrets_args: bool = _redact("secrets", "args")
    redact_pii_args: bool = _redact("pii", "args")
    blocked_keywords_args: str = _block("args")
    phone_regions: str = setting(
        "US, GB, DE, PL",
        description=(
            "ISO 3166 codes, separated by commas or new lines, whose national phone formats PII "
            "redaction reads; at most 16. A number written with + is redacted whatever this says."
        ),
    )

    @field_validator("phone_regions")
    @classmethod
    def _regions(cls, value: str) -> str:
        parse_phone_regions(value)
        return value

    def edge_configured(self) -> bool:
        """True when any edge does something; otherwise the capability attaches nothing."""
        return any(
            value
            for name, value in self
            if name.startswith(("redact_", "blocked_keywords_")) and value
        )


register(
    id="guardrails",
    name="Guardrails",
    category="utility",
    does=(
        "Inspects the text moving through a run at four edges — the prompt, the answer, tool "
        "results and tool arguments — and either scrubs a match or ends the run."
    ),
    examples=(
        "scrub API keys from tool results before the model reads them",
        "redact customers' phone numbers from answers",
        "end a run that mentions a blocked project name",
    ),
    needs="At least one edge configured; output checks make answers arrive step by step instead of word by word.",
    never="Changes the stored transcript of what a person typed (the model gets the scrubbed prompt).",
    tools=(),
    voice=VoiceMode.LIVE,
    voice_note="reviews the call's transcripts",
    config_model=GuardrailsConfig,
)

# --- compaction ------------------------------------------------------------------------------


class CompactionConfig(CapabilityConfig):
    """Long conversation settings."""

    strategy: Literal["summarize", "tiered", "clear_tool_results", "sliding_window"] = setting(
        "summarize",
        description=(
            "summarize keeps what old turns said; tiered clears old tool results first and "
            "summarizes only if that was not enough; the others drop information."
        ),
        labels={
            "summarize": "Summarize older messages",
            "tiered": "Clear old tool results, then summarize",
            "clear_tool_results": "Clear old tool results",
            "sliding_window": "Keep only recent messages",
        },
    )
    max_fraction: float = setting(
        0.9, ge=0.05, le=0.95, description="Share of the context window at which compaction starts."
    )
    keep_messages: int = setting(
        20,
        ge=1,
        le=1000,
        advanced=True,
        description="Recent messages that survive a summary or a window.",
    )
    keep_tool_pairs: int = setting(
        3,
        ge=0,
        le=1000,
        advanced=True,
        description="Recent tool calls that keep their result.",
    )
    summary_prompt: str | None = setting(
        None,
        advanced=True,
        description="What the summarizing model is told; must contain {messages}. Empty uses the library's.",
    )
    context_window: int | None = setting(
        None,
        ge=1024,
        advanced=True,
        description="Overrides the model's window: what compaction triggers against and the chat's gauge divides by.",
    )
    fallback_context_window: int = setting(
        200000,
        ge=1024,
        advanced=True,
        description="Window assumed when the model's cannot be resolved.",
    )

    @field_validator("summary_prompt")
    @classmethod
    def _has_messages(cls, value: str | None) -> str | None:
        if value is not None and "{messages}" not in value:
            raise ValueError("summary_prompt must contain {messages}")
        return value


register(
    id="compaction",
    name="Long conversations",
    category="utility",
    does=(
        "Trims a long run's message history before each request, so a run that would have hit "
        "the model's limit keeps working."
    ),
    examples=(
        "a research run that reads dozens of long pages",
        "a coding session with large directory listings",
    ),
    needs="Nothing; a summary is a model request charged to the run.",
    never=(
        "Buys a summary that cannot help: when the instructions and tool schemas alone pass the "
        "trigger it skips and says why in the chat."
    ),
    tools=(),
    voice=VoiceMode.NEVER,
    voice_note="no effect: acts on a text run's model requests, which a call does not send",
    advanced=True,
    config_model=CompactionConfig,
)

# --- media -----------------------------------------------------------------------------------


class MediaConfig(CapabilityConfig):
    """Images out of history settings."""

    threshold_bytes: int = setting(
        32768,
        ge=1024,
        le=10 * 1024 * 1024,
        description="Parts of this size or larger are stored outside the history (1 KiB–10 MiB).",
    )


register(
    id="media",
    name="Images out of history",
    category="utility",
    does=(
        "Stores the large parts of a compacted conversation (images, files) in the deployment's "
        "storage and leaves a reference in the saved history, so they are not rewritten every turn."
    ),
    examples=("a long chat about many screenshots that has been compacted",),
    needs="Nothing.",
    never="Reduces what the model is sent, or issues a public URL for a stored part.",
    tools=(),
    voice=VoiceMode.NEVER,
    voice_note="no effect: acts on a text run's stored history, which a call does not send",
    advanced=True,
    config_model=MediaConfig,
)

# --- tool_output_limits ----------------------------------------------------------------------


class ToolOutputLimitsConfig(CapabilityConfig):
    """Tool output limit settings."""

    action: Literal["spill", "truncate", "summarize"] = setting(
        "spill",
        description=(
            "spill (lossless) stores the full return and hands the model a handle, a preview "
            "and its shape; truncate cuts it with a marker; summarize replaces it with a model's summary."
        ),
        labels={
            "spill": "Spill — store it, read slices on demand",
            "truncate": "Truncate",
            "summarize": "Summarize with a model",
        },
    )
    threshold: int = setting(
        60000,
        ge=1,
        description="Size from which a return is reduced; 15000 when over_tokens is on and this is not set.",
    )
    over_tokens: bool = setting(
        False, description="Measure the threshold in estimated tokens, not characters."
    )
    max_chars: int = setting(
        20000,
        ge=1,
        advanced=True,
        description="Characters kept when a return is truncated (or a spill falls back to truncation); never more than the threshold.",
    )
    truncation_strategy: Literal["head", "tail", "head_tail"] = setting(
        "head_tail",
        advanced=True,
        description="Which end or ends to keep.",
        labels={"head": "The beginning", "tail": "The end", "head_tail": "Both ends"},
    )
    strip_ansi: bool = setting(
        False,
        advanced=True,
        description="Remove terminal colour codes before measuring and reducing.",
    )
    summary_prompt: str | None = setting(
        None,
        advanced=True,
        description="What the summarizing model is told; must contain {tool_name} and {output}.",
    )

    @model_validator(mode="after")
    def _token_threshold(self) -> ToolOutputLimitsConfig:
        # Seed: the threshold is 60000, 15000 when over_tokens is on — a token counts ~4 chars.
        if self.over_tokens and "threshold" not in self.model_fields_set:
            self.threshold = 15000
        return self

    @field_validator("summary_prompt")
    @classmethod
    def _placeholders(cls, value: str | None) -> str | None:
        if value is not None and not all(k in value for k in ("{tool_name}", "{output}")):
            raise ValueError("summary_prompt must contain {tool_name} and {output}")
        return value


register(
    id="tool_output_limits",
    name="Tool output limits",
    category="utility",
    does=(
        "Stops an oversized tool return from being resent with every later request: it is "
        "reduced once, when produced, and the agent reads slices of the full text on demand."
    ),
    examples=(
        "a grep over a large repository",
        "a verbose API response from an MCP server",
    ),
    needs="Nothing; a spill is kept in the agent's workspace (or in memory) for the run only.",
    never="Keeps a spilled output beyond the run.",
    tools=(
        tool(
            "read_tool_result",
            does="Read a slice of a tool result that was too large and was stored behind a handle.",
            when=(
                "Use it when a tool result says it was spilled and gives a handle: the preview "
                "you saw is not the whole result. Page through it, or filter it by a pattern."
            ),
            args={
                "handle": "The handle from the reduced tool result. Required.",
                "offset": "Matching lines to skip from the start (or end); default 0.",
                "limit": "Lines to return; default 200, clamped to a built-in cap.",
                "from_end": "Count offset and limit from the end; default false.",
                "pattern": "Optional literal substring; only lines containing it are returned.",
            },
            returns=(
                "The requested lines with their line numbers, followed by how many lines the "
                "result has and whether more remain beyond the slice. An unknown or expired "
                "handle is a retry request."
            ),
        ),
    ),
    voice=VoiceMode.LIVE,
    voice_note="as is",
    advanced=True,
    config_model=ToolOutputLimitsConfig,
)

# --- artifacts -------------------------------------------------------------------------------


class ArtifactsConfig(CapabilityConfig):
    """Apps has no settings."""


register(
    id="artifacts",
    name="Apps",
    category="utility",
    does=(
        "Lets the agent publish a finished page — a report, a small dashboard, a summary — "
        "under a stable link; publishing again under the same name adds a version."
    ),
    examples=(
        "a weekly report a schedule republishes every Monday",
        "a small dashboard of a project's status",
    ),
    needs="Nothing; a page from a file needs the Sandbox.",
    never="Gives the page network access, or shares a first publication beyond the person the run was for.",
    tools=(
        tool(
            "publish_artifact",
            does="Publish a finished page — a report, a small dashboard, a summary — under a stable link.",
            when=(
                "Use it for something the person will open again or share. Embed your own data "
                "and load charting libraries from the deployment's library set, not a CDN: the "
                "page has no network. The same name adds a version to the same link."
            ),
            args={
                "name": "The page's identity: `^[a-z0-9][a-z0-9-]{0,63}$` plus `.html` or `.md`. Required.",
                "path": "A workspace file to publish. Exactly one of path, content, edits.",
                "content": "The page inline, for an agent without a workspace.",
                "edits": "Exact {old, new} replacements on the version read_artifact returned.",
            },
            returns=(
                "The link and the version number, or `unchanged` for identical bytes. A wrong "
                "call (more than one source, a bad name or extension, an empty or too-large "
                "page, a replacement matching nowhere or several times, a publication in "
                "between) is a retry request naming what to change."
            ),
        ),
        tool(
            "read_artifact",
            does="Read the current version of a page this agent published, as written.",
            when="Use it before editing a published page with edits.",
            args={"name": "The page's name. Required."},
            returns=(
                "A header line (version, format, size) and the source, cut at 100,000 "
                "characters — the header says when. Where no identified person is listening "
                "(a public widget, an embed, a schedule), a refusal."
            ),
        ),
    ),
    voice=VoiceMode.LIVE,
    voice_note="as is",
    recommended=True,
    config_model=ArtifactsConfig,
)
