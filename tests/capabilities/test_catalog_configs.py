"""Config defaults and ranges are exactly the seed's tables; enums carry human labels."""

import pytest
from pydantic import ValidationError

from apps.capabilities.registry import all_capabilities, get_capability
from apps.capabilities.schema import enums_missing_labels

# (capability, field): (default, minimum, maximum) — None where the seed gives no bound.
RANGES = {
    ("knowledge", "default_top_k"): (5, 1, 50),
    ("knowledge", "query_analysis_max_variants"): (3, 1, 5),
    ("web_research", "max_results"): (5, 1, 10),
    ("web_fetch", "max_content_chars"): (50000, 1000, 200000),
    ("browser_use", "max_steps"): (50, 1, 200),
    ("browser_use", "candidate_cap"): (60, 2, 200),
    ("browser_use", "preview_width"): (1024, 320, 1920),
    ("code_execution", "max_memory_mb"): (256, 16, 4096),
    ("text_to_speech", "max_characters"): (5000, 1, 10000),
    ("video_generation", "timeout_seconds"): (600, 60, 1800),
    ("coding_agent", "timeout_minutes"): (15, 1, 60),
    ("subagents", "max_depth"): (1, 1, 3),
    ("subagents", "max_fanout"): (3, 1, 10),
    ("subagents", "max_result_chars"): (2000, 200, 20000),
    ("tool_search", "max_results"): (10, 1, 50),
    ("compaction", "max_fraction"): (0.9, 0.05, 0.95),
    ("media", "threshold_bytes"): (32768, 1024, 10 * 1024 * 1024),
    ("channel_tools", "default_limit"): (20, 1, 200),
}

# (capability, field): (default, allowed values)
CHOICES = {
    ("knowledge", "query_analysis_mode"): ("off", ["off", "multi_query", "hyde"]),
    ("knowledge", "parent_context"): ("off", ["off", "window", "parent"]),
    ("web_research", "method"): ("duckduckgo", ["duckduckgo", "native", "tavily", "brave", "exa"]),
    ("web_fetch", "method"): ("local", ["local", "native", "auto"]),
    ("browser_use", "connection"): ("built_in", ["built_in", "proxy", "hosted"]),
    ("sandbox", "backend"): ("state", ["state", "service"]),
    (
        "sandbox",
        "session_scope",
    ): ("conversation", ["run", "conversation", "channel", "user", "agent"]),
    ("text_to_speech", "provider"): ("openai", ["openai", "elevenlabs", "google"]),
    ("video_generation", "provider"): ("google", ["google", "byteplus", "xai", "alibaba"]),
    ("coding_agent", "harness"): ("claude_code", ["claude_code", "codex"]),
    ("coding_agent", "access"): ("edit", ["edit", "read_only"]),
    ("subagents", "mode"): ("sync", ["sync", "async", "auto"]),
    ("planning", "cache_ttl"): ("5m", ["5m", "1h"]),
    ("tool_search", "strategy"): ("auto", ["auto", "keywords", "bm25", "regex"]),
    (
        "compaction",
        "strategy",
    ): ("summarize", ["summarize", "tiered", "clear_tool_results", "sliding_window"]),
    ("tool_output_limits", "action"): ("spill", ["spill", "truncate", "summarize"]),
    ("tool_output_limits", "truncation_strategy"): ("head_tail", ["head", "tail", "head_tail"]),
}

# Defaults of settings that are neither a range nor a choice.
DEFAULTS = {
    "knowledge": {"self_query_enabled": False},
    "web_fetch": {"allowed_domains": None, "blocked_domains": None},
    "browser_use": {"vision": False, "preview": True, "hosted_key_param": "apiKey"},
    "code_execution": {"timeout_secs": 10},
    "sandbox": {"connection_id": None, "runtime": None, "include_execute": True},
    "image_generation": {"provider": "openai", "model": "gpt-image-2", "quality": None},
    "text_to_speech": {"model": "gpt-4o-mini-tts", "voices": []},
    "video_generation": {"model": "gemini-omni-1.1-flash", "alibaba_region": "ap-southeast-1"},
    "subagents": {
        "inline": [],
        "allow_questions": False,
        "allow_dynamic": False,
        "share_with_delegates": [],
    },
    "planning": {"enable_subtasks": False},
    "thinking": {"effort": None},
    "clock": {"timezone": "UTC"},
    "guardrails": {"phone_regions": "US, GB, DE, PL", "redact_pii_out": False},
    "compaction": {"keep_messages": 20, "keep_tool_pairs": 3, "fallback_context_window": 200000},
    "tool_output_limits": {"threshold": 60000, "over_tokens": False, "max_chars": 20000},
    "channel_tools": {"tools": []},
    "follow_ups": {"model_profile_id": None},
}


def _prop(cap_id, field):
    return get_capability(cap_id).config_schema()["properties"][field]


@pytest.mark.parametrize(("key", "expected"), RANGES.items(), ids=lambda v: str(v))
def test_range_and_default_match_the_seed(key, expected):
    cap_id, field = key
    default, lo, hi = expected
    prop = _prop(cap_id, field)
    assert prop["default"] == default
    assert prop["minimum"] == lo
    assert prop["maximum"] == hi
    cap = get_capability(cap_id)
    cap.parse_config({field: lo})
    cap.parse_config({field: hi})
    with pytest.raises(ValidationError):
        cap.parse_config({field: hi * 2})


def test_code_execution_timeout_is_positive_and_at_most_120():
    cap = get_capability("code_execution")
    prop = _prop("code_execution", "timeout_secs")
    assert (prop["default"], prop["exclusiveMinimum"], prop["maximum"]) == (10, 0, 120)
    cap.parse_config({"timeout_secs": 0.5})
    for bad in (0, 121):
        with pytest.raises(ValidationError):
            cap.parse_config({"timeout_secs": bad})


@pytest.mark.parametrize(("key", "expected"), CHOICES.items(), ids=lambda v: str(v))
def test_choices_and_default_match_the_seed_with_labels(key, expected):
    cap_id, field = key
    default, values = expected
    prop = _prop(cap_id, field)
    assert prop["default"] == default
    assert prop["enum"] == values
    assert set(prop["x-enum-labels"]) == set(values)
    with pytest.raises(ValidationError):
        get_capability(cap_id).parse_config({field: "not-a-choice"})


@pytest.mark.parametrize(("cap_id", "defaults"), DEFAULTS.items())
def test_other_defaults_match_the_seed(cap_id, defaults):
    config = get_capability(cap_id).default_config()
    for field, value in defaults.items():
        assert config[field] == value, field


@pytest.mark.parametrize("cap", all_capabilities(), ids=lambda c: c.id)
def test_every_enumeration_carries_x_enum_labels(cap):
    assert enums_missing_labels(cap.config_schema()) == []


def test_optional_enum_carries_labels_next_to_its_values():
    prop = _prop("thinking", "effort")
    (enum_branch,) = [b for b in prop["anyOf"] if "enum" in b]
    assert enum_branch["x-enum-labels"]["xhigh"]
    assert prop["default"] is None


def test_list_of_enum_carries_labels_on_its_items():
    items = _prop("channel_tools", "tools")["items"]
    assert (
        set(items["x-enum-labels"])
        == set(items["enum"])
        == {
            "get_channel_info",
            "list_channel_members",
            "search_channels",
            "read_channel_history",
        }
    )


def test_fine_tuning_settings_are_marked_advanced():
    assert _prop("web_fetch", "max_content_chars")["x-advanced"] is True
    assert _prop("compaction", "summary_prompt")["x-advanced"] is True
    assert "x-advanced" not in _prop("web_research", "method")


def test_over_tokens_lowers_the_unset_threshold_to_15000():
    cap = get_capability("tool_output_limits")
    assert cap.parse_config({"over_tokens": True}).threshold == 15000
    assert cap.parse_config({"over_tokens": True, "threshold": 30000}).threshold == 30000


def _errors(cap_id, config):
    with pytest.raises(ValidationError) as info:
        get_capability(cap_id).parse_config(config)
    return {err["loc"][0] if err["loc"] else "": err["msg"] for err in info.value.errors()}


def test_phone_regions_refuse_an_unknown_code_and_more_than_16():
    assert "GB" in _errors("guardrails", {"phone_regions": "UK, US"})["phone_regions"]
    many = ", ".join(["US", "GB", "DE", "PL", "FR", "ES", "IT", "NL", "BE", "AT"] * 2)
    assert "at most 16" in _errors("guardrails", {"phone_regions": many})["phone_regions"]
    get_capability("guardrails").parse_config({"phone_regions": "us\nGB"})


def test_share_with_delegates_never_names_subagents():
    errors = _errors("subagents", {"share_with_delegates": ["sandbox", "subagents"]})
    assert "share_with_delegates" in errors


def test_codex_has_no_read_only_and_drops_base_url():
    assert "access" in _errors("coding_agent", {"harness": "codex", "access": "read_only"})
    config = get_capability("coding_agent").parse_config(
        {"harness": "codex", "base_url": "https://openrouter.ai/api"}
    )
    assert config.base_url is None


def test_gemini_omni_refuses_a_duration_and_gemini_speech_refuses_mp3():
    assert "seconds" in _errors("video_generation", {"seconds": 5})
    assert "output_format" in _errors(
        "text_to_speech", {"provider": "google", "output_format": "mp3"}
    )
    assert "voice" in _errors("text_to_speech", {"provider": "elevenlabs"})


def test_browser_proxy_and_hosted_need_their_address():
    assert "proxy_url" in _errors("browser_use", {"connection": "proxy"})
    assert "proxy_url" in _errors(
        "browser_use", {"connection": "proxy", "proxy_url": "ftp://p.example:1"}
    )
    assert "hosted_url" in _errors(
        "browser_use", {"connection": "hosted", "hosted_url": "https://h.example"}
    )
    get_capability("browser_use").parse_config(
        {"connection": "proxy", "proxy_url": "socks5://p.example:1080"}
    )


def test_clock_timezone_is_an_iana_name():
    get_capability("clock").parse_config({"timezone": "Europe/Warsaw"})
    assert "timezone" in _errors("clock", {"timezone": "Mars/Olympus"})


def test_mem0_self_hosted_url_must_be_https():
    assert "base_url" in _errors("memory_mem0", {"base_url": "http://mem0.internal"})
    get_capability("memory_mem0").parse_config({"base_url": "https://mem0.example.com"})


def test_summary_prompts_need_their_placeholders():
    assert "summary_prompt" in _errors("compaction", {"summary_prompt": "Summarize."})
    assert "summary_prompt" in _errors("tool_output_limits", {"summary_prompt": "{output}"})
