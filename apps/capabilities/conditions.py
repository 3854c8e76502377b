"""Conditions over a capability's configuration.

A capability declares *which configurations* change something — which method makes a tool
provider-executed, which settings require a key, which settings offer a declared tool to the
model — instead of leaving each validator to know it (seed 003: "Qué configuraciones entregan
qué herramientas lo declara la propia capability"). A condition is called with the parsed config
model and is also describable as JSON, so the Builder can say it in words.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


def _fmt(value: Any) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    return f"`{value}`"


@dataclass(frozen=True)
class When:
    """True when the config's ``field`` is one of ``values``."""

    field: str
    values: tuple[Any, ...]

    def __init__(self, field: str, *values: Any) -> None:
        if not values:
            raise ValueError("When(...) needs at least one value")
        object.__setattr__(self, "field", field)
        object.__setattr__(self, "values", tuple(values))

    def __call__(self, config: Any) -> bool:
        return getattr(config, self.field) in self.values

    @property
    def text(self) -> str:
        return f"`{self.field}` is " + " or ".join(_fmt(v) for v in self.values)

    def as_json(self) -> dict[str, Any]:
        return {"field": self.field, "in": list(self.values), "text": self.text}


@dataclass(frozen=True)
class Predicate:
    """Any other condition, with the sentence that says it."""

    fn: Callable[[Any], bool]
    text: str

    def __call__(self, config: Any) -> bool:
        return bool(self.fn(config))

    def as_json(self) -> dict[str, Any]:
        return {"text": self.text}


@dataclass(frozen=True)
class AnyOf:
    """True when any of ``conditions`` is."""

    conditions: tuple[When | Predicate, ...]

    def __init__(self, *conditions: When | Predicate) -> None:
        object.__setattr__(self, "conditions", tuple(conditions))

    def __call__(self, config: Any) -> bool:
        return any(c(config) for c in self.conditions)

    @property
    def text(self) -> str:
        return ", or ".join(c.text for c in self.conditions)

    def as_json(self) -> dict[str, Any]:
        return {"any_of": [c.as_json() for c in self.conditions], "text": self.text}


# A tool that stays declared (so approval and renames can reach it) but is offered to no model.
NEVER_OFFERED = Predicate(lambda _config: False, "never offered to a model")


def condition_json(condition: Callable[[Any], bool] | None) -> dict[str, Any] | None:
    """JSON for a condition; a bare callable says only that it is code-defined."""
    if condition is None:
        return None
    as_json = getattr(condition, "as_json", None)
    if callable(as_json):
        return as_json()
    return {"text": getattr(condition, "__doc__", None) or "decided by code"}
