"""What a run admitted by a chat binding (an *exposure*) adds, and who follows its segments.

``apps.channels`` sits above runs (STYLE.md, "Which way the imports point"), so it registers two
hooks here in its AppConfig.ready() and runs never imports it:

- the **exposure resolver**, ``resolver(run) -> ExposureAssembly | None``, asked by
  ``runner.assemble`` for a run with an ``exposure_id``: the binding's prompt (appended to the
  instructions), the capability bindings the binding row grants (``channel_tools`` is granted
  there and never in a spec) and what their tools read (the channel the message arrived in);
- the **segment observer**, ``observer(run) -> context manager | None``, entered around every
  segment of a run a caller drives here — the channel's first segment and every resume — so a
  resumed run's continuation reaches the thread its question came from (the channels app relays
  the run's frames there while the segment executes).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ExposureAssembly:
    """What the binding that admitted a run adds to it."""

    instructions: str = ""
    # Extra capability bindings (objects shaped like apps.agents.spec.CapabilityBinding).
    bindings: tuple[Any, ...] = ()
    # What channel_tools' tools read (apps.capabilities.tools.channel_tools.ChannelAccess).
    channel: Any = None
    # Anything else a later capability needs from the binding (the sandbox scope override).
    extras: dict[str, Any] = field(default_factory=dict)


_resolvers: list[Callable[[Any], ExposureAssembly | None]] = []
_observers: list[Callable[[Any], contextlib.AbstractContextManager | None]] = []


def register_exposure_resolver(resolver: Callable[[Any], ExposureAssembly | None]) -> None:
    if resolver not in _resolvers:
        _resolvers.append(resolver)


def register_segment_observer(
    observer: Callable[[Any], contextlib.AbstractContextManager | None],
) -> None:
    if observer not in _observers:
        _observers.append(observer)


def exposure_for_run(run) -> ExposureAssembly | None:
    """The first registered resolver's answer for a run a binding admitted; None otherwise."""
    if getattr(run, "exposure_id", None) is None:
        return None
    for resolver in _resolvers:
        found = resolver(run)
        if found is not None:
            return found
    return None


@contextlib.contextmanager
def segment_observed(run) -> Iterator[None]:
    """Enter every observer's context around one segment of ``run`` (nothing when none)."""
    with contextlib.ExitStack() as stack:
        if getattr(run, "exposure_id", None) is not None:
            for observer in _observers:
                manager = observer(run)
                if manager is not None:
                    stack.enter_context(manager)
        yield
