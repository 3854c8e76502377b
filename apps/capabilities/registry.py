"""The capability registry: what this deployment's agents can be given.

Capabilities are code (seed 000, "Añadir a esta lista"): nothing an operator types brings a new
one into existence, which is what keeps the set of things an agent can do reviewable. Each module
under ``catalog/`` calls :func:`register` once per capability; ``GET /api/v1/agents/capabilities``
serves :func:`capability_payload` of :func:`all_capabilities`.

A capability is the unit worth switching on or off (one line in the Builder, one entry in a
spec). It declares its tools because approval happens per tool: "may this agent write files?"
and "may it read them?" are two decisions even when one capability answers both. A tool is
referenced by its stable id, never by the name the model sees, so an approval gate stays on a
renamed tool.

This module is pure Python: it imports no Django model, so settings-free code may import it.
"""

from __future__ import annotations

import enum
import re
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from pydantic import BaseModel

from .conditions import condition_json
from .implementations import is_built
from .schema import CapabilityConfig, config_json_schema, config_schema_copy
from .tool_text import compose_summary, has_tool_text_shape, render_tool_text

# The eight scopes a capability may declare (seed 000, "Scopes"). All are granted by default
# (DEFAULT_GRANTED_SCOPES in settings); an operator removes one deployment-wide.
KNOWN_SCOPES: tuple[str, ...] = (
    "knowledge:read",
    "conversations:read",
    "web:read",
    "web:fetch",
    "web:browse",
    "code:execute",
    "sandbox:execute",
    "agents:delegate",
)

# Builder groups, in the order of the seed's table.
CATEGORIES: tuple[str, ...] = (
    "knowledge",
    "research",
    "analysis",
    "reasoning",
    "utility",
    "channels",
)

CATEGORY_LABELS: dict[str, str] = {
    "knowledge": "Knowledge",
    "research": "Research",
    "analysis": "Analysis",
    "reasoning": "Reasoning",
    "utility": "Utility",
    "channels": "Chat channels",
}

ID_RE = re.compile(r"^[a-z][a-z0-9_]{0,63}$")

# A name a model can call: the function-name rule OpenAI and Anthropic both enforce. A
# ``tool_overrides`` name outside it is refused at publish ("un nombre que ningún modelo podría
# llamar").
MODEL_CALLABLE_TOOL_NAME_RE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")

NOT_BUILT_REASON = "tools not built yet — declared and validated"


class KeyRequirement(enum.StrEnum):
    """Whether a binding needs an organization secret (``secret_id``)."""

    NONE = "none"
    REQUIRED = "required"
    # Depends on the binding's config, e.g. only the paid web-search methods need a key.
    CONDITIONAL = "conditional"


class VoiceMode(enum.StrEnum):
    """How a capability takes part in a voice call (the API's ``voice`` field)."""

    LIVE = "live"  # in the call's own realtime model
    HAND_OFF = "hand_off"  # runs on the agent's text model, the call hands it a task
    NEVER = "never"  # does not take part in a call


class CapabilityDeclarationError(ValueError):
    """A ``register(...)`` call declares something the registry cannot accept."""


def _parse_config(config_model: type[BaseModel], config: Any) -> BaseModel:
    if config is None:
        return config_model()
    if isinstance(config, config_model):
        return config
    if isinstance(config, BaseModel):
        config = config.model_dump()
    return config_model.model_validate(config)


@dataclass(frozen=True)
class ToolSpec:
    """One tool a capability contributes, by its stable id.

    ``description`` is what the model reads before deciding to call (``<summary>`` then
    ``<returns>``); ``title`` is its first sentence, shown by the Builder next to the approval
    box. ``side_effecting`` tells the Builder which tools act on the world.
    ``provider_executed_when(config)`` is true for the configurations in which the model's
    provider runs the tool (a native search), where no approval gate can hold the call.
    ``offered_when(config)`` is false for configurations in which the tool stays declared (so
    approval and renames reach it) but is not offered to the model.
    """

    id: str
    description: str
    side_effecting: bool = False
    provider_executed_when: Callable[[Any], bool] | None = None
    offered_when: Callable[[Any], bool] | None = None
    title: str = ""
    arguments: tuple[str, ...] = ()
    # Filled by register(): lets is_provider_executed()/is_offered() accept a plain dict.
    config_model: type[BaseModel] | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.title:
            summary = self.description.removeprefix("<summary>").split("\n", 1)[0]
            object.__setattr__(self, "title", summary.strip())

    def _config(self, config: Any) -> Any:
        if self.config_model is None:
            return config
        return _parse_config(self.config_model, config)

    def is_provider_executed(self, config: Any = None) -> bool:
        """True when, under ``config``, the model's provider runs this tool, not this deployment."""
        if self.provider_executed_when is None:
            return False
        return bool(self.provider_executed_when(self._config(config)))

    def is_offered(self, config: Any = None) -> bool:
        """True when, under ``config``, this declared tool is offered to the model."""
        if self.offered_when is None:
            return True
        return bool(self.offered_when(self._config(config)))


def tool(
    id: str,
    *,
    does: str,
    when: str,
    args: Mapping[str, str],
    returns: str,
    side_effecting: bool = False,
    provider_executed_when: Callable[[Any], bool] | None = None,
    offered_when: Callable[[Any], bool] | None = None,
) -> ToolSpec:
    """Declare a tool the four-part way: what it does, when to use it, its arguments, its return.

    ``does`` is one sentence (also the Builder's label next to the approval box); ``args`` maps
    each argument to its meaning, default and limit (``{}`` for none).
    """
    return ToolSpec(
        id=id,
        description=render_tool_text(compose_summary(does=does, when=when, args=args), returns),
        side_effecting=side_effecting,
        provider_executed_when=provider_executed_when,
        offered_when=offered_when,
        title=" ".join(does.split()),
        arguments=tuple(args),
    )


@dataclass(frozen=True)
class Capability:
    """A capability as registered: what it is, what it contributes, what it needs."""

    id: str
    name: str
    category: str
    description: str
    tools: tuple[ToolSpec, ...]
    scopes: tuple[str, ...]
    key_requirement: KeyRequirement
    voice: VoiceMode
    recommended: bool
    advanced: bool
    config_model: type[BaseModel]
    # Why it is not available while no builder is registered, in words.
    not_built_reason: str
    # For CONDITIONAL: which configurations need a key.
    key_condition: Callable[[Any], bool] | None = None
    # What the key is for, in words ("for the paid methods", "the provider's API key").
    key_note: str = ""
    # The seed's finer voice column ("adapted", "mapped", "on screen" …), in words.
    voice_note: str = ""
    examples: tuple[str, ...] = ()
    needs: str = ""
    never: str = ""

    # -- availability --------------------------------------------------------------------
    @property
    def available(self) -> bool:
        """True exactly when a run gets this capability's tools: its code registered a builder."""
        return is_built(self.id)

    @property
    def unavailable_reason(self) -> str:
        return "" if self.available else self.not_built_reason

    # -- configuration -------------------------------------------------------------------
    def parse_config(self, config: Any = None) -> BaseModel:
        """Validate ``config`` (dict, model or None for defaults) against the config model."""
        return _parse_config(self.config_model, config)

    def default_config(self) -> dict[str, Any]:
        return self.config_model().model_dump(mode="json")

    def config_schema(self) -> dict[str, Any]:
        return config_schema_copy(self.config_model)

    # -- keys ----------------------------------------------------------------------------
    def needs_key(self, config: Any = None) -> bool:
        """True when a binding with ``config`` needs a ``secret_id``."""
        if self.key_requirement is KeyRequirement.NONE:
            return False
        if self.key_requirement is KeyRequirement.REQUIRED:
            return True
        assert self.key_condition is not None  # guaranteed by register()
        return bool(self.key_condition(self.parse_config(config)))

    # -- tools ---------------------------------------------------------------------------
    @property
    def tool_ids(self) -> tuple[str, ...]:
        return tuple(t.id for t in self.tools)

    def tool(self, tool_id: str) -> ToolSpec:
        for spec in self.tools:
            if spec.id == tool_id:
                return spec
        declared = ", ".join(self.tool_ids) or "none"
        raise KeyError(
            f"capability {self.id!r} declares no tool {tool_id!r} (its tools: {declared})"
        )

    def offered_tools(self, config: Any = None) -> tuple[ToolSpec, ...]:
        """The declared tools this config offers to the model."""
        parsed = self.parse_config(config)
        return tuple(t for t in self.tools if t.is_offered(parsed))

    def provider_executed_tools(self, config: Any = None) -> tuple[ToolSpec, ...]:
        parsed = self.parse_config(config)
        return tuple(t for t in self.tools if t.is_provider_executed(parsed))


def _builder_description(does: str, examples: Iterable[str], needs: str, never: str) -> str:
    """Plain words for the Builder: what it lets the agent do, examples, needs, never does."""
    parts = [" ".join(does.split())]
    examples = [" ".join(e.split()) for e in examples]
    if examples:
        parts.append("For example: " + "; ".join(examples) + ".")
    if needs:
        parts.append("Needs: " + " ".join(needs.split()))
    if never:
        parts.append("Never: " + " ".join(never.split()))
    return "\n\n".join(parts)


def build_capability(
    *,
    id: str,
    name: str,
    category: str,
    does: str,
    examples: Iterable[str],
    needs: str,
    never: str,
    tools: tuple[ToolSpec, ...],
    voice: VoiceMode,
    scopes: Iterable[str] = (),
    key_requirement: KeyRequirement = KeyRequirement.NONE,
    key_condition: Callable[[Any], bool] | None = None,
    key_note: str = "",
    voice_note: str = "",
    recommended: bool = False,
    advanced: bool = False,
    config_model: type[BaseModel],
    unavailable_reason: str = NOT_BUILT_REASON,
) -> Capability:
    """Check a declaration and return the frozen :class:`Capability`; raise on anything wrong."""

    def refuse(message: str) -> CapabilityDeclarationError:
        return CapabilityDeclarationError(f"capability {id!r}: {message}")

    if not ID_RE.match(id or ""):
        raise refuse("id must be lower_snake_case, at most 64 characters")
    if not name.strip():
        raise refuse("needs an English name")
    if category not in CATEGORIES:
        raise refuse(f"unknown category {category!r} (known: {', '.join(CATEGORIES)})")
    if not isinstance(tools, tuple):
        # tools=() is how a capability with no tools says so (seed 000): a list is a mistake.
        raise refuse("tools must be a tuple of ToolSpec — write tools=() for none")
    scopes = tuple(scopes)
    for scope in scopes:
        if scope not in KNOWN_SCOPES:
            raise refuse(f"unknown scope {scope!r} (known: {', '.join(KNOWN_SCOPES)})")
    if len(set(scopes)) != len(scopes):
        raise refuse("a scope is listed twice")
    key_requirement = KeyRequirement(key_requirement)
    voice = VoiceMode(voice)
    if (key_requirement is KeyRequirement.CONDITIONAL) != (key_condition is not None):
        raise refuse("key_condition is given exactly when key_requirement is conditional")
    if not (isinstance(config_model, type) and issubclass(config_model, BaseModel)):
        raise refuse("config_model must be a pydantic model class")
    if not issubclass(config_model, CapabilityConfig):
        raise refuse("config_model must derive from CapabilityConfig (unknown keys refused)")
    try:
        config_json_schema(config_model)
        defaults = config_model()
    except Exception as exc:  # a declaration bug, surfaced at import with its cause
        raise refuse(f"config model {config_model.__name__} is not usable: {exc}") from exc
    if not unavailable_reason.strip():
        raise refuse("a capability says why it is unavailable while it has no builder")

    seen: set[str] = set()
    bound: list[ToolSpec] = []
    for spec in tools:
        if not isinstance(spec, ToolSpec):
            raise refuse(f"tools holds {spec!r}, not a ToolSpec")
        if not ID_RE.match(spec.id):
            raise refuse(f"tool id {spec.id!r} must be lower_snake_case")
        if spec.id in seen:
            raise refuse(f"tool {spec.id!r} is declared twice")
        seen.add(spec.id)
        if not has_tool_text_shape(spec.description):
            raise refuse(f"tool {spec.id!r}: description must be <summary>…</summary><returns>…")
        spec = replace(spec, config_model=config_model)
        # Conditions must evaluate on the defaults, or a typo in a field name waits for a run.
        try:
            spec.is_provider_executed(defaults)
            spec.is_offered(defaults)
        except Exception as exc:
            raise refuse(f"tool {spec.id!r}: a condition fails on the defaults: {exc}") from exc
        bound.append(spec)
    if key_condition is not None:
        try:
            key_condition(defaults)
        except Exception as exc:
            raise refuse(f"key_condition fails on the defaults: {exc}") from exc

    examples = tuple(examples)
    return Capability(
        id=id,
        name=name,
        category=category,
        description=_builder_description(does, examples, needs, never),
        tools=tuple(bound),
        scopes=scopes,
        key_requirement=key_requirement,
        voice=voice,
        recommended=recommended,
        advanced=advanced,
        config_model=config_model,
        not_built_reason=unavailable_reason,
        key_condition=key_condition,
        key_note=key_note,
        voice_note=voice_note,
        examples=examples,
        needs=needs,
        never=never,
    )


class CapabilityRegistry:
    """An ordered set of capabilities, keyed by id; tool ids are unique across it."""

    def __init__(self, loader: Callable[[], None] | None = None) -> None:
        self._capabilities: dict[str, Capability] = {}
        self._tool_owner: dict[str, str] = {}
        self._loader = loader
        self._loaded = loader is None
        self._lock = threading.RLock()
        # The thread running the loader: the catalog's register() calls land here while it
        # imports, and must not wait for themselves.
        self._loading_thread: int | None = None

    def _ensure_loaded(self) -> None:
        if self._loaded:
            return
        with self._lock:
            if self._loaded or self._loading_thread == threading.get_ident():
                return
            # Loaded only once the whole catalog is in: another thread (a worker assembles
            # several runs at once) waits on the lock instead of reading half a registry.
            self._loading_thread = threading.get_ident()
            assert self._loader is not None
            try:
                self._loader()
                self._loaded = True
            finally:
                self._loading_thread = None

    def add(self, capability: Capability) -> Capability:
        with self._lock:
            if capability.id in self._capabilities:
                raise CapabilityDeclarationError(
                    f"capability {capability.id!r} is already registered; ids are unique"
                )
            for spec in capability.tools:
                owner = self._tool_owner.get(spec.id)
                if owner is not None:
                    raise CapabilityDeclarationError(
                        f"capability {capability.id!r}: tool id {spec.id!r} is already "
                        f"declared by {owner!r}; tool ids are unique across the registry"
                    )
            self._capabilities[capability.id] = capability
            for spec in capability.tools:
                self._tool_owner[spec.id] = capability.id
        return capability

    def register(self, **declaration: Any) -> Capability:
        return self.add(build_capability(**declaration))

    def get(self, capability_id: str) -> Capability:
        self._ensure_loaded()
        try:
            return self._capabilities[capability_id]
        except KeyError:
            raise KeyError(
                f"no capability {capability_id!r} is registered in this deployment "
                f"(registered: {', '.join(self._capabilities) or 'none'})"
            ) from None

    def all(self) -> tuple[Capability, ...]:
        self._ensure_loaded()
        return tuple(self._capabilities.values())

    def ids(self) -> tuple[str, ...]:
        return tuple(c.id for c in self.all())

    def tool_owner(self, tool_id: str) -> Capability:
        """The capability that declares ``tool_id``; ``KeyError`` when none does."""
        self._ensure_loaded()
        try:
            return self._capabilities[self._tool_owner[tool_id]]
        except KeyError:
            raise KeyError(f"no registered capability declares a tool {tool_id!r}") from None


def _load_catalog() -> None:
    from . import catalog  # noqa: F401  (each module calls register())


REGISTRY = CapabilityRegistry(loader=_load_catalog)


def register(**declaration: Any) -> Capability:
    """Declare a capability in this deployment's registry; a duplicate id is refused.

    Keyword arguments: ``id, name, category, does, examples, needs, never, tools, voice,
    config_model`` and optionally ``scopes, key_requirement, key_condition, key_note,
    voice_note, recommended, advanced, unavailable_reason``. Whether it is available is not
    declared: it is, exactly when its code registers a toolset builder (``implementations``). ``tools`` has no
    default on purpose: a capability without tools writes ``tools=()``.
    """
    return REGISTRY.register(**declaration)


def get_capability(capability_id: str) -> Capability:
    """The registered capability ``capability_id``; ``KeyError`` naming it otherwise."""
    return REGISTRY.get(capability_id)


def all_capabilities() -> tuple[Capability, ...]:
    """Every registered capability, in the order of the seed's table."""
    return REGISTRY.all()


def tool_payload(spec: ToolSpec) -> dict[str, Any]:
    return {
        "id": spec.id,
        "title": spec.title,
        "description": spec.description,
        "side_effecting": spec.side_effecting,
        "provider_executed_when": condition_json(spec.provider_executed_when),
        "offered_when": condition_json(spec.offered_when),
    }


def capability_payload(cap: Capability) -> dict[str, Any]:
    """The JSON-able form served by ``GET /api/v1/agents/capabilities``."""
    description = cap.description
    if not cap.available:
        # Seed/issue: a capability not built yet says so in its description and in the API.
        description += f"\n\nNot available yet: {cap.unavailable_reason}."
    return {
        "id": cap.id,
        "name": cap.name,
        "category": cap.category,
        "category_label": CATEGORY_LABELS[cap.category],
        "description": description,
        "examples": list(cap.examples),
        "needs": cap.needs,
        "never": cap.never,
        "tools": [tool_payload(t) for t in cap.tools],
        "scopes": list(cap.scopes),
        "key_requirement": cap.key_requirement.value,
        "key_required_when": condition_json(cap.key_condition),
        "key_note": cap.key_note,
        "voice": cap.voice.value,
        "voice_note": cap.voice_note,
        "recommended": cap.recommended,
        "advanced": cap.advanced,
        "available": cap.available,
        "unavailable_reason": cap.unavailable_reason,
        "config_schema": cap.config_schema(),
        "config_defaults": cap.default_config(),
    }


def registry_payload() -> list[dict[str, Any]]:
    return [capability_payload(c) for c in all_capabilities()]
