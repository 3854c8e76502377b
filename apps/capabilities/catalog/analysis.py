"""Analysis: compute, keep files, draw, and generate media."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from ..conditions import Predicate
from ..registry import KeyRequirement, VoiceMode, register, tool
from ..schema import CapabilityConfig, setting

# --- code_execution --------------------------------------------------------------------------


class CodeExecutionConfig(CapabilityConfig):
    """Calculations limits: per agent, bounded, not open-ended."""

    timeout_secs: float = setting(
        10, gt=0, le=120, description="Wall-clock seconds a program may run."
    )
    max_memory_mb: int = setting(
        256, ge=16, le=4096, description="Memory a program may use, in MB."
    )


register(
    id="code_execution",
    name="Calculations",
    category="analysis",
    does=(
        "Lets the agent run a small Python program to calculate something exactly, in a "
        "restricted sandbox with no network and no file system."
    ),
    examples=(
        "work out a loan's monthly payment",
        "compute statistics over numbers from a spreadsheet",
        "convert dates across time zones",
    ),
    needs="Nothing. Time and memory are capped per agent.",
    never="Reaches the network or any file, or keeps anything between calls (that is the Sandbox).",
    tools=(
        tool(
            "run_python",
            does="Run a small Python program to calculate something.",
            when=(
                "Use it for arithmetic, statistics, dates and data transformations where a "
                "mental estimate could be wrong. It has no network, no file system and no "
                "memory between calls; for files that persist, use the sandbox's tools."
            ),
            args={
                "code": (
                    "The Python source. Print what you need to see; the value of the last "
                    "expression is returned too. Required."
                ),
            },
            returns=(
                "The printed output and the last expression's value, cut at 8,000 characters "
                "with a marker saying so. An error in the code (a NameError, a SyntaxError) is "
                "a retry request with the traceback. Exceeding timeout_secs (10 unless "
                "configured) or max_memory_mb (256) stops the program and says which limit, "
                "with whatever it printed before. Opening a file is refused: there is none."
            ),
        ),
    ),
    scopes=("code:execute",),
    voice=VoiceMode.LIVE,
    voice_note="as is",
    recommended=True,
    config_model=CodeExecutionConfig,
    # Built: apps/capabilities/tools/.
)

# --- sandbox ---------------------------------------------------------------------------------


class SandboxConfig(CapabilityConfig):
    """Sandbox settings. The backend is infrastructure; the session scope
    is a data-sharing policy — getting it wrong shows one person another's files."""

    backend: Literal["state", "service"] = setting(
        "state",
        description=(
            "state keeps files in this database, capped by SANDBOX_STATE_MAX_BYTES, with no "
            "shell. service runs a container on a registered sandbox connection, with a shell."
        ),
        labels={
            "state": "Files only (stored in this deployment)",
            "service": "Container with a shell (a sandbox connection)",
        },
    )
    connection_id: str | None = setting(
        None,
        description=(
            "A registered sandbox connection; empty takes the organization's default. Only "
            "with the service backend."
        ),
    )
    session_scope: Literal["run", "conversation", "channel", "user", "agent"] = setting(
        "conversation",
        description="Who shares the workspace. `agent` crosses a boundary between people.",
        labels={
            "run": "Nobody — a new workspace every turn",
            "conversation": "Everyone in that chat",
            "channel": "Every thread of a channel",
            "user": "One person, across every surface",
            "agent": "Everyone who talks to this agent, organization-wide",
        },
    )
    runtime: str | None = setting(
        None,
        description="A runtime alias the connection's service allows. Only with the service backend.",
    )
    include_execute: bool = setting(
        True,
        description="Off removes the shell entirely, rather than putting it behind a gate.",
    )


_FORBIDDEN_PATHS = (
    "Credentials (**/.env, **/*.pem, **/*.key, **/credentials*, **/.ssh/**, **/.aws/**) and the "
    "system tree (/etc/**, /usr/**, /proc/** …) are refused whatever the approval policy; the "
    "refusal is a readable result."
)

register(
    id="sandbox",
    name="Sandbox",
    category="analysis",
    does=(
        "Gives the agent a workspace that survives between turns: files it can list, read, "
        "search, write and edit, and — on a container backend — a real shell."
    ),
    examples=(
        "keep a research notes file across a conversation",
        "build a CSV report and hand it to the person",
        "run a script on an uploaded spreadsheet",
    ),
    needs=(
        "Nothing for the files-only backend; a sandbox connection (the deployment's own, "
        "registered on first use) for a shell."
    ),
    never=(
        "Reads or writes credential files or the system tree; lets a spec choose a container "
        "image, a mount or a network mode (those are the operator's)."
    ),
    tools=(
        tool(
            "ls",
            does="List a directory of the workspace.",
            when="Use it to see what is in one directory. It does not recurse: to find files by pattern use glob.",
            args={"path": "Directory to list; default `.` (the workspace root)."},
            returns="One line per entry, directories ending in `/`; a line saying the directory is empty or missing.",
        ),
        tool(
            "read_file",
            does="Read a file of the workspace.",
            when=f"Use it to read a file before answering about it or editing it. {_FORBIDDEN_PATHS}",
            args={
                "path": "The file's path. Required.",
                "offset": "Line to start from; default 0.",
                "limit": "Lines to read; default 2,000.",
            },
            returns=(
                "The lines with their numbers; an image or PDF as binary content. A slice ends "
                "with a note giving the offset to continue from. A missing file is a retry request."
            ),
        ),
        tool(
            "glob",
            does="Find files by name pattern, recursively.",
            when="Use it to find files anywhere below a directory (ls does not recurse).",
            args={
                "pattern": "A glob such as `**/*.csv`. Required.",
                "path": "Where to start; default `.`.",
            },
            returns=(
                "The matching paths, stopping at 100 with a line saying how many more matched "
                "— narrow the pattern rather than treating the slice as everything."
            ),
        ),
        tool(
            "grep",
            does="Search file contents in the workspace for a pattern.",
            when=(
                "Use it to find where text occurs across files. Matches inside a forbidden "
                "file are dropped, so a search never returns a line of one."
            ),
            args={
                "pattern": "A regular expression. Required.",
                "path": "File or directory to search; default the whole workspace.",
                "glob_pattern": "Only search files matching this glob; default all.",
                "output_mode": (
                    "`files_with_matches` (default): matching paths; `content`: matching lines "
                    "with path and line number; `count`: matches per file."
                ),
                "ignore_hidden": "Skip hidden files and directories; default true.",
            },
            returns=(
                "Three different shapes depending on output_mode (paths, lines, or counts); a "
                "line saying nothing matched when nothing did."
            ),
        ),
        tool(
            "write_file",
            does="Create a file, or replace a file's whole content, in the workspace.",
            when=f"Use it for new files or complete rewrites; for a small change use edit_file. {_FORBIDDEN_PATHS}",
            args={
                "path": "The file's path. Required.",
                "content": "The whole content. Required.",
            },
            returns="A line confirming the write; a refusal or a full workspace says so.",
        ),
        tool(
            "edit_file",
            does="Change part of a file with an exact replacement.",
            when="Use it for a targeted change after reading the file; read it first, a stale edit is refused.",
            args={
                "path": "The file's path. Required.",
                "old_string": "Text to replace; must occur exactly once unless replace_all. Required.",
                "new_string": "Its replacement. Required.",
                "replace_all": "Replace every occurrence; default false.",
            },
            returns=(
                "A line confirming the edit. Text found zero times, or several times without "
                "replace_all, is a retry request saying which."
            ),
        ),
        tool(
            "execute",
            does="Run a shell command in the workspace's container.",
            when=(
                "Use it to run programs, scripts, package managers or tests. Only on a "
                "container backend. Commands naming a forbidden path are refused."
            ),
            args={
                "command": "The shell command. Required.",
                "timeout": "Seconds before the command is stopped; default 120.",
            },
            returns=(
                "The command's combined output, truncated at 100,000 bytes with a marker. A "
                "non-zero exit is a result that starts `Command failed (exit code N)`, not an error."
            ),
            side_effecting=True,
            offered_when=Predicate(
                lambda c: c.backend == "service" and c.include_execute,
                "`backend` is `service` and `include_execute` is on",
            ),
        ),
    ),
    scopes=("sandbox:execute",),
    key_requirement=KeyRequirement.CONDITIONAL,
    # The Daytona key is the sandbox connection's credential, registered by an operator with the
    # connection; no binding config asks for it, so the binding's secret_id is never needed.
    key_condition=Predicate(
        lambda _c: False,
        "never on the binding: a Daytona key belongs to the sandbox connection",
    ),
    key_note="for Daytona — held by the sandbox connection an operator registers, not by the binding",
    voice=VoiceMode.HAND_OFF,
    voice_note="handed off to the agent's text model",
    recommended=True,
    config_model=SandboxConfig,
)

# --- charts ----------------------------------------------------------------------------------


class ChartsConfig(CapabilityConfig):
    """Charts has no settings."""


register(
    id="charts",
    name="Charts",
    category="analysis",
    does="Lets the agent draw a chart in the chat from numbers it already has.",
    examples=(
        "turn a table of monthly sales into a line chart",
        "compare three plans' prices in a bar chart",
    ),
    needs="Nothing. Pair it with Calculations or Knowledge search to get the numbers.",
    never="Downloads, calculates or aggregates numbers.",
    tools=(
        tool(
            "create_chart",
            does="Draw a chart with numbers you already have, so the person can see them.",
            when=(
                "Use it for figures worth seeing — a trend, a comparison. It is for numbers "
                "you have; to draw something that is not data use generate_image or draw; to "
                "compute the numbers first use run_python."
            ),
            args={
                "title": "The chart's title. Required.",
                "kind": "`line` (default), `bar`, `area`, `scatter` or `pie`.",
                "x_values": "The axis points, in order. Required, at least one.",
                "series": (
                    "One or more series, each {name, values} with exactly one value per "
                    "x_value. Required."
                ),
                "x_label": "Axis label; optional.",
                "y_label": "Axis label; optional.",
            },
            returns=(
                "A line confirming the chart was drawn in the conversation. An axis without "
                "points, a chart without series, or a series with a different number of "
                "values than points is a retry request naming what is missing."
            ),
        ),
    ),
    voice=VoiceMode.LIVE,
    voice_note="as is",
    recommended=True,
    config_model=ChartsConfig,
    # Built: apps/capabilities/tools/.
)

# --- visuals ---------------------------------------------------------------------------------


class VisualsConfig(CapabilityConfig):
    """Visuals has no settings; the bundled visual-design skill carries the style."""


register(
    id="visuals",
    name="Visuals",
    category="analysis",
    does=(
        "Lets the agent draw in the conversation: a diagram, a flow, a map itinerary, an "
        "interactive explainer or a 3D scene, rendered live as it is written."
    ),
    examples=(
        "sketch how a request travels through the system as a sequence diagram",
        "plot a trip's stops on a map",
        "build a small slider that shows how interest compounds",
    ),
    needs="Nothing; the Builder also binds the visual-design skill and Charts with it.",
    never="Loads anything from another site or reaches the network; scripts run in an isolated frame.",
    tools=(
        tool(
            "draw",
            does="Draw in the conversation: a diagram, a map, a flow, an explanation, a 3D scene.",
            when=(
                "Draw when the person should understand how something works, use a tool made "
                "for the moment, or follow places on a map. Answer a fact with text, exact "
                "values with a Markdown table, and figures to look at with create_chart."
            ),
            args={
                "kind": "`svg` for diagrams and illustrations, `mermaid` for flowcharts, sequences and ER diagrams, `html` for anything interactive. Required.",
                "title": "A short title; later turns refer to the visual by it. Required.",
                "content": "The drawing: one <svg> element, Mermaid source, or an HTML document. Required.",
                "images": (
                    "Optional, up to six {name, source}: a conversation attachment, a workspace "
                    "file or an https:// address (only for an agent that reads the web, on a "
                    "host it may read). Each at most 2 MiB; use it as {{image:NAME}}."
                ),
            },
            returns=(
                "The visual's id, and the render report when someone is watching (script "
                "errors, failed loads, refused requests; waits up to ten seconds) — fix a "
                "broken drawing with revise_visual. With nobody watching it answers at once and "
                "says the drawing was not checked. Too large, an SVG that is not a single <svg>, "
                "or something loaded from another site is a retry request saying what to change."
            ),
        ),
        tool(
            "revise_visual",
            does="Change a visual with exact replacements, without drawing it again.",
            when="Use it to fix or adjust a visual; read it first with read_visual if it is from an earlier turn.",
            args={
                "visual_id": "The visual's id. Required.",
                "edits": "A list of {old, new}; each old must occur exactly once. Required.",
            },
            returns=(
                "The new visual's id (each revision is its own visual) and its render report. "
                "A replacement that matches nowhere or several times is a retry request."
            ),
        ),
        tool(
            "read_visual",
            does="Read a visual of this conversation as it is, with its revisions applied.",
            when="Use it before revising a visual from an earlier turn; earlier turns reach you as text only.",
            args={"visual_id": "The visual's id, as your instructions list them. Required."},
            returns="The visual's kind, title and current source. An unknown id is a retry request.",
        ),
    ),
    voice=VoiceMode.LIVE,
    voice_note="as is",
    recommended=True,
    config_model=VisualsConfig,
)

# --- image_generation ------------------------------------------------------------------------


class ImageGenerationConfig(CapabilityConfig):
    """Image generation settings. Unset settings take the
    provider's own default, so switching the capability on is enough to generate."""

    provider: Literal["openai", "google"] = setting(
        "openai",
        description=(
            "The providers whose model class honours the image tool and accepts an API key. "
            "The key is from this provider."
        ),
        labels={"openai": "OpenAI", "google": "Google"},
    )
    model: str = setting(
        "gpt-image-2",
        min_length=1,
        description="One of that provider's image models, from the image model catalog.",
    )
    quality: Literal["low", "medium", "high", "auto"] | None = setting(
        None,
        description="Empty uses the provider's default.",
        labels={"low": "Low", "medium": "Medium", "high": "High", "auto": "Automatic"},
    )
    size: Literal["auto", "1024x1024", "1024x1536", "1536x1024", "512", "1K", "2K", "4K"] | None = (
        setting(
            None,
            description="Empty uses the provider's default.",
            labels={
                "auto": "Automatic",
                "1024x1024": "1024 × 1024 (square)",
                "1024x1536": "1024 × 1536 (portrait)",
                "1536x1024": "1536 × 1024 (landscape)",
                "512": "512 px",
                "1K": "1K",
                "2K": "2K",
                "4K": "4K",
            },
        )
    )
    background: Literal["transparent", "opaque", "auto"] | None = setting(
        None,
        description="Empty uses the provider's default.",
        labels={"transparent": "Transparent", "opaque": "Opaque", "auto": "Automatic"},
    )
    output_format: Literal["png", "webp", "jpeg"] | None = setting(
        None,
        description="Empty uses the provider's default.",
        labels={"png": "PNG", "webp": "WebP", "jpeg": "JPEG"},
    )
    aspect_ratio: str | None = setting(
        None,
        pattern=r"^\d{1,2}:\d{1,2}$",
        description="Such as 16:9, 1:1 or 9:16. Empty uses the provider's default.",
    )


register(
    id="image_generation",
    name="Image generation",
    category="analysis",
    does=(
        "Lets the agent draw an image from a written description with a dedicated image model, "
        "whatever model the agent itself runs on."
    ),
    examples=(
        "an illustration for a blog post",
        "a product mock-up on a white background",
        "a header image for a newsletter",
    ),
    needs="An API key of the chosen provider from the organization's vault.",
    never="Plots data (that is Charts). Its spend counts against budgets like any model request.",
    tools=(
        tool(
            "generate_image",
            does="Generate an image from a written description.",
            when=(
                "Use it for something that has to be drawn: an illustration, a scene, a "
                "mock-up. For numbers use create_chart; for diagrams use draw."
            ),
            args={
                "prompt": "What the image shows, its style and composition. Required.",
                "size": "Optional; defaults to the binding's size or the provider's default.",
                "aspect_ratio": "Optional, e.g. `16:9`; defaults to the binding's setting.",
            },
            returns=(
                "The image's filename, shown in the conversation and served at "
                "/api/v1/generated/{filename}; also written under /output when the agent has a "
                "workspace. Over the organization's media quota or budget, a result saying so "
                "before anything is spent. A rejected key is a result for the author to fix."
            ),
            side_effecting=True,
        ),
    ),
    key_requirement=KeyRequirement.REQUIRED,
    key_note="the chosen image provider's API key",
    voice=VoiceMode.LIVE,
    voice_note="as is",
    config_model=ImageGenerationConfig,
)

# --- text_to_speech --------------------------------------------------------------------------


class SpeechVoice(BaseModel):
    """A voice the agent may switch to for one clip."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(
        min_length=1, max_length=200, description="A catalog voice, or an ElevenLabs voice id."
    )
    note: str | None = Field(
        None, max_length=120, description="For an account voice: who it is, in a few words."
    )


class TextToSpeechConfig(CapabilityConfig):
    """Text to speech settings."""

    provider: Literal["openai", "elevenlabs", "google"] = setting(
        "openai",
        description="The speech provider; the binding's key is this provider's.",
        labels={"openai": "OpenAI", "elevenlabs": "ElevenLabs", "google": "Google Gemini"},
    )
    model: str = setting(
        "gpt-4o-mini-tts",
        min_length=1,
        description="One of that provider's speech models, from the speech model catalog.",
    )
    voice: str | None = setting(
        None,
        validate_default=True,
        description=(
            "The agent's default voice; empty uses the model's first. A catalog voice for "
            "OpenAI and Gemini; a voice id of your own library for ElevenLabs (required there)."
        ),
    )
    voices: list[SpeechVoice] = setting(
        default_factory=list,
        max_length=20,
        description=(
            "Up to 20 voices the agent may switch to per clip. Empty allows every voice of the "
            "model (for ElevenLabs, any voice id of the account, cloned ones included)."
        ),
    )
    output_format: Literal["mp3", "wav"] | None = setting(
        None,
        description="Empty uses the provider's first format. Gemini returns wav only.",
        labels={"mp3": "MP3", "wav": "WAV"},
    )
    max_characters: int = setting(
        5000, ge=1, le=10000, description="The most text one call may speak."
    )

    @field_validator("voice")
    @classmethod
    def _account_voice(cls, value: str | None, info: ValidationInfo) -> str | None:
        if info.data.get("provider") == "elevenlabs" and not value:
            # ElevenLabs voices belong to the account; the catalog lists none.
            raise ValueError("ElevenLabs needs a voice: a voice id from the account's library")
        return value

    @field_validator("voices")
    @classmethod
    def _unique_voices(cls, value: list[SpeechVoice]) -> list[SpeechVoice]:
        ids = [v.id for v in value]
        if len(ids) != len(set(ids)):
            raise ValueError("a voice is listed twice")
        return value

    @field_validator("output_format")
    @classmethod
    def _format_for_provider(cls, value: str | None, info: ValidationInfo) -> str | None:
        if info.data.get("provider") == "google" and value == "mp3":
            raise ValueError("Gemini returns wav only; choose wav or leave it empty")
        return value


register(
    id="text_to_speech",
    name="Text to speech",
    category="analysis",
    does="Lets the agent read a text aloud as an audio clip, shown in the conversation as a player.",
    examples=(
        "narrate a weekly summary",
        "voice a short dialogue with two voices",
        "produce an audio version of a help article",
    ),
    needs="An API key of the chosen speech provider from the organization's vault.",
    never="Speaks more than max_characters in one call, or goes past a budget (priced before the call).",
    tools=(
        tool(
            "generate_speech",
            does="Read a text aloud as an audio clip.",
            when=(
                "Use it when the person wants audio. A long text becomes one clip, split at "
                "paragraphs, sentences or words and spoken in order."
            ),
            args={
                "text": "What to say; at most max_characters (5,000 unless configured). Required.",
                "voice": "One of the allowed voices; defaults to the binding's voice.",
                "instructions": (
                    "Tone, pace, accent — at most 1,000 characters; used by models that read "
                    "them, ignored by the others."
                ),
            },
            returns=(
                "The clip's filename, shown as a player and written under output/ when a "
                "workspace is open. Empty or too-long text, a voice outside the list, or a "
                "provider that is rate-limited is a retry request; a rejected key, an unknown "
                "voice or an exhausted budget is a result for the author or operator."
            ),
            side_effecting=True,
        ),
    ),
    key_requirement=KeyRequirement.REQUIRED,
    key_note="the chosen speech provider's API key",
    voice=VoiceMode.LIVE,
    voice_note="as is",
    config_model=TextToSpeechConfig,
)

# --- video_generation ------------------------------------------------------------------------

_HOST_LABEL_RE = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$")


class VideoGenerationConfig(CapabilityConfig):
    """Video generation settings. Settings are defaults the
    agent may change per clip; max_resolution and max_seconds are the limits."""

    provider: Literal["google", "byteplus", "xai", "alibaba"] = setting(
        "google",
        description="The video provider; the binding's key is this provider's.",
        labels={
            "google": "Google",
            "byteplus": "BytePlus",
            "xai": "xAI",
            "alibaba": "Alibaba Cloud",
        },
    )
    model: str = setting(
        "gemini-omni-1.1-flash",
        min_length=1,
        description="One of that provider's video models, from the video model catalog.",
    )
    resolution: str | None = setting(
        None, description="The default resolution; empty uses the model's first."
    )
    max_resolution: str | None = setting(
        None,
        description=(
            "The highest resolution the agent may ask for; at least resolution. Empty allows "
            "any the model renders — resolution is what a second costs."
        ),
    )
    aspect_ratio: str | None = setting(
        None, description="The default aspect ratio; empty uses the model's first."
    )
    seconds: int | None = setting(
        None,
        ge=1,
        description="Clip length; empty means 5, or the model's nearest. Refused for Gemini Omni.",
    )
    max_seconds: int | None = setting(
        None,
        ge=1,
        description="The longest clip the agent may ask for; empty is the model's longest. Refused for Gemini Omni.",
    )
    audio: bool | None = setting(
        None, description="Sound on by default or not; empty uses the provider's default."
    )
    alibaba_workspace: str | None = setting(
        None,
        advanced=True,
        description="Alibaba only: the Model Studio workspace id (a host label). Empty uses DashScope's shared endpoint.",
    )
    alibaba_region: Literal[
        "ap-southeast-1", "us-east-1", "eu-central-1", "ap-northeast-1", "cn-beijing", "cn-hongkong"
    ] = setting(
        "ap-southeast-1",
        advanced=True,
        description="Alibaba only: the region of the endpoint.",
        labels={
            "ap-southeast-1": "Singapore (ap-southeast-1)",
            "us-east-1": "US East (us-east-1)",
            "eu-central-1": "Frankfurt (eu-central-1)",
            "ap-northeast-1": "Tokyo (ap-northeast-1)",
            "cn-beijing": "Beijing (cn-beijing)",
            "cn-hongkong": "Hong Kong (cn-hongkong)",
        },
    )
    timeout_seconds: int = setting(
        600, ge=60, le=1800, advanced=True, description="How long a call waits for its clip."
    )

    @field_validator("seconds", "max_seconds")
    @classmethod
    def _duration(cls, value: int | None, info: ValidationInfo) -> int | None:
        if value is not None and str(info.data.get("model", "")).startswith("gemini-omni"):
            # Gemini Omni decides its own duration.
            raise ValueError("refused for Gemini Omni, which decides its own duration")
        seconds = info.data.get("seconds")
        if info.field_name == "max_seconds" and value is not None and seconds and seconds > value:
            raise ValueError("max_seconds cannot be shorter than seconds")
        return value

    @field_validator("alibaba_workspace")
    @classmethod
    def _host_label(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is None:
            return None
        if info.data.get("provider") != "alibaba":
            raise ValueError("applies to the Alibaba provider only")
        if not _HOST_LABEL_RE.match(value):
            raise ValueError("must be a single host label (letters, digits, hyphens)")
        return value


register(
    id="video_generation",
    name="Video generation",
    category="analysis",
    does="Lets the agent make a short video clip from a written description, or starting from an image it made.",
    examples=(
        "a five-second product teaser",
        "animate an illustration generated earlier in the run",
    ),
    needs="An API key of the chosen video provider from the organization's vault.",
    never=(
        "Goes past max_resolution or max_seconds, or past a budget (priced before the call). "
        "A clip is the single most expensive call an agent makes."
    ),
    tools=(
        tool(
            "generate_video",
            does="Create a short video from a written description.",
            when=(
                "Use it when the person wants a moving clip. Start from an image with `image` "
                "when you generated one in this run. Expect the call to take one or several "
                "minutes."
            ),
            args={
                "prompt": "What happens in the clip. Required.",
                "image": (
                    "Optional starting image: a filename generate_image returned in this run, "
                    "or a workspace path."
                ),
                "resolution": "Optional; up to max_resolution. Defaults to the binding's.",
                "aspect_ratio": "Optional; any the model renders. Defaults to the binding's.",
                "seconds": "Optional; up to max_seconds. Not accepted by Gemini Omni.",
                "audio": "Optional, where the model makes sound optional.",
            },
            returns=(
                "The clip's filename, shown as a player and written under output/ when a "
                "workspace is open. An empty prompt, a duration or ratio the model does not "
                "make, or an unreadable image is a retry request; a rejected key, an exhausted "
                "budget, a content-policy refusal or a job past timeout_seconds (600 unless "
                "configured) is a result."
            ),
            side_effecting=True,
        ),
    ),
    key_requirement=KeyRequirement.REQUIRED,
    key_note="the chosen video provider's API key",
    voice=VoiceMode.HAND_OFF,
    voice_note="handed off to the agent's text model",
    config_model=VideoGenerationConfig,
)

# --- coding_agent ----------------------------------------------------------------------------


class CodingAgentConfig(CapabilityConfig):
    """Coding agent settings."""

    harness: Literal["claude_code", "codex"] = setting(
        "claude_code",
        description=(
            "Claude Code takes an Anthropic API key or a Claude subscription token; Codex an "
            "OpenAI API key or a ChatGPT sign-in."
        ),
        labels={"claude_code": "Claude Code", "codex": "Codex"},
    )
    access: Literal["edit", "read_only"] = setting(
        "edit",
        description="edit changes files and runs commands; read_only reads the code and answers (Claude Code only).",
        labels={"edit": "Edit files and run commands", "read_only": "Read only (Claude Code)"},
    )
    model: str | None = setting(
        None, description="The harness's model; empty uses the harness's default."
    )
    base_url: str | None = setting(
        None,
        advanced=True,
        description=(
            "Claude Code only: a gateway speaking the Anthropic API, such as "
            "https://openrouter.ai/api, whose key the vault then holds. Dropped when choosing Codex."
        ),
    )
    timeout_minutes: int = setting(15, ge=1, le=60, description="Minutes per task.")

    @field_validator("access")
    @classmethod
    def _access_for_harness(cls, value: str, info: ValidationInfo) -> str:
        if value == "read_only" and info.data.get("harness") == "codex":
            # Codex's read-only mode is a sandbox of its own that does not start inside the
            # agent's container.
            raise ValueError("Codex has no read_only access; choose edit, or Claude Code")
        return value

    @field_validator("base_url")
    @classmethod
    def _gateway(cls, value: str | None, info: ValidationInfo) -> str | None:
        if info.data.get("harness") == "codex":
            return None  # seed: dropped when choosing Codex
        if value is not None and not value.startswith("https://"):
            raise ValueError("base_url must be an https:// address")
        return value


register(
    id="coding_agent",
    name="Coding agent",
    category="analysis",
    does=(
        "Lets the agent hand a software task to Claude Code or Codex, which work on it in the "
        "agent's own sandbox until done while the chat shows them working."
    ),
    examples=(
        "fix a failing test in a repository in the workspace",
        "add a command-line flag to a script",
        "explain how a module works (read-only)",
    ),
    needs=(
        "The Sandbox on a container connection with its shell on, a runtime with the harness "
        "installed, and the harness's key or sign-in from the vault."
    ),
    never="Shares one person's subscription sign-in with another person's task.",
    tools=(
        tool(
            "run_coding_agent",
            does="Hand a software task to the coding agent, which works on it in the sandbox until done.",
            when=(
                "Use it for real software work — changing code across files, running tests, "
                "investigating a codebase. Tasks in one conversation continue one session, so "
                "a follow-up knows what the previous task read."
            ),
            args={
                "task": "The whole task, with what done looks like. Required.",
                "fresh_session": "Start from scratch instead of continuing the conversation's session; default false.",
            },
            returns=(
                "The harness's answer, each step it took and the files it changed. A task past "
                "timeout_minutes (15 unless configured) or stopped by the person is stopped "
                "with its whole process group, and says so."
            ),
            side_effecting=True,
        ),
    ),
    scopes=("sandbox:execute",),
    key_requirement=KeyRequirement.REQUIRED,
    key_note="the harness's key: Anthropic key or Claude token (Claude Code), OpenAI key or ChatGPT sign-in (Codex)",
    voice=VoiceMode.HAND_OFF,
    voice_note="handed off to the agent's text model",
    config_model=CodingAgentConfig,
)
