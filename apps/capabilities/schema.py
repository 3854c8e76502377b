"""Config models and the JSON schema the Builder draws its forms from.

Every capability's configuration is a pydantic model whose defaults and ranges are the seed's
tables. The Builder generates its form from the model's JSON schema, with two extensions:

- ``x-enum-labels``: an object mapping every value of an enumeration to its human label. Seed 000
  (Búsqueda web): without labels the picker offered ``duckduckgo`` and ``exa`` in the case they
  are stored in, which reads as a configuration key to recognise rather than a product to pick.
  Every enumeration carries it; a config model without labels for one is refused at registration.
- ``x-advanced``: ``true`` on fine-tuning settings (limits, cache life, prompts). Seed 000: those
  are folded under Advanced settings, which open by themselves where one has been set.

Every property also carries a human ``title``: the one its ``setting(label=...)`` gives, or one
made from the field name by ``human_label`` (units in brackets, "Id" dropped, acronyms upper
case) instead of pydantic's "Timeout Secs" / "Max Memory Mb" / "Model Profile Id" (issue 15).
"""

from __future__ import annotations

from functools import cache
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class CapabilityConfig(BaseModel):
    """Base of every capability's configuration: unknown keys are refused, not ignored.

    A key the model does not know is a typo or a setting from another capability, and a publish
    that silently drops it reads as a decision that does nothing.
    """

    model_config = ConfigDict(extra="forbid")


def setting(
    default: Any = ...,
    *,
    description: str,
    labels: dict[str, str] | None = None,
    label: str | None = None,
    advanced: bool = False,
    default_factory: Any = None,
    **constraints: Any,
) -> Any:
    """A config field with its description, enum labels and Advanced flag.

    ``labels`` maps each allowed value to the label the console shows; it lands in the schema as
    ``x-enum-labels`` next to the ``enum`` it describes (also inside ``anyOf`` / ``items``).
    """
    extra: dict[str, Any] = {}
    if labels is not None:
        extra["x-enum-labels"] = dict(labels)
    if advanced:
        extra["x-advanced"] = True
    kwargs: dict[str, Any] = {"description": description, **constraints}
    if label is not None:
        kwargs["title"] = label
    if extra:
        kwargs["json_schema_extra"] = extra
    if default_factory is not None:
        return Field(default_factory=default_factory, **kwargs)
    return Field(default, **kwargs)


class EnumLabelsMissing(ValueError):
    """A config schema has an enumeration without a label for every value."""


def _walk(node: Any):
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from _walk(value)
    elif isinstance(node, list):
        for value in node:
            yield from _walk(value)


def _spread_labels(node: Any) -> None:
    """Copy a property's ``x-enum-labels`` onto every ``enum`` nested below it.

    ``Literal[...] | None`` puts the enum inside ``anyOf``; ``list[Literal[...]]`` inside
    ``items``. A form reading either node finds the labels where the values are.
    """
    for sub in _walk(node):
        labels = sub.get("x-enum-labels")
        if not isinstance(labels, dict):
            continue
        for inner in _walk({k: v for k, v in sub.items() if k != "x-enum-labels"}):
            if "enum" in inner and "x-enum-labels" not in inner:
                inner["x-enum-labels"] = {
                    value: labels[value] for value in inner["enum"] if value in labels
                }
        if "enum" in sub:
            sub["x-enum-labels"] = {v: labels[v] for v in sub["enum"] if v in labels}


def enums_missing_labels(schema: dict[str, Any]) -> list[str]:
    """Every enumeration value in ``schema`` that has no label, as ``title: value``."""
    missing: list[str] = []
    for node in _walk(schema):
        if "enum" not in node:
            continue
        labels = node.get("x-enum-labels") or {}
        for value in node["enum"]:
            if value not in labels or not str(labels[value]).strip():
                missing.append(f"{node.get('title', '?')}: {value!r}")
    return missing


@cache
def config_json_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The JSON schema of a config model, labels spread, checked for unlabelled enums.

    Cached per model: callers receive a fresh copy so they may change it.
    """
    schema = model.model_json_schema()
    for name, prop in schema.get("properties", {}).items():
        if prop.get("title") in (None, name.replace("_", " ").title()):
            prop["title"] = human_label(name)
    _spread_labels(schema)
    missing = enums_missing_labels(schema)
    if missing:
        raise EnumLabelsMissing(
            f"{model.__name__}: every enumeration needs x-enum-labels; missing {', '.join(missing)}"
        )
    return schema


def config_schema_copy(model: type[BaseModel]) -> dict[str, Any]:
    import copy

    return copy.deepcopy(config_json_schema(model))


# Field-name words as a person writes them.
_WORDS = {
    "url": "URL", "cdp": "CDP", "llm": "LLM", "pii": "personal data", "ttl": "lifetime",
    "ansi": "ANSI", "mcp": "MCP", "api": "API", "args": "arguments", "in": "input",
    "out": "output", "chars": "characters", "max": "maximum", "min": "minimum",
}  # fmt: skip
_UNITS = {
    "secs": "seconds", "seconds": "seconds", "minutes": "minutes", "ms": "milliseconds",
    "mb": "MB", "bytes": "bytes", "usd": "USD", "chars": "characters", "tokens": "tokens",
}  # fmt: skip


# Names the word rules cannot read well.
_WHERE = {
    "args": "tool arguments", "in": "the person's message", "out": "the answer",
    "tool": "tool results",
}  # fmt: skip
_LABELS = {
    "max_chars": "Maximum length (characters)",
    "max_seconds": "Maximum duration (seconds)",
    "default_top_k": "Results per search",
    "hosted_key_param": "Hosted key parameter",
    "self_query_enabled": "Self-query",
    "goal_reanchor": "Re-anchor on the goal",
    "max_fanout": "Maximum fan-out",
    "over_tokens": "Above (tokens)",
    **{f"blocked_keywords_{k}": f"Blocked keywords in {w}" for k, w in _WHERE.items()},
    **{f"redact_pii_{k}": f"Redact personal data in {w}" for k, w in _WHERE.items()},
    **{f"redact_secrets_{k}": f"Redact secrets in {w}" for k, w in _WHERE.items()},
}


def human_label(name: str) -> str:
    """A config field's label from its name: ``timeout_secs`` → "Timeout (seconds)",
    ``max_memory_mb`` → "Maximum memory (MB)", ``model_profile_id`` → "Model profile"."""
    if name in _LABELS:
        return _LABELS[name]
    words = name.split("_")
    if len(words) > 1 and words[-1] == "id":
        words = words[:-1]
    unit = None
    if len(words) > 1 and words[-1] in _UNITS and words[-1] not in ("tokens",):
        unit = _UNITS[words.pop()]
    text = " ".join(_WORDS.get(word, word) for word in words)
    text = text[:1].upper() + text[1:]
    return f"{text} ({unit})" if unit else text
