"""The context gauge: how full the model's context window was on a turn's last request.

Seed 003, "Cómo de lleno está el context window": the reading is the provider's own
``input_tokens`` of the turn's last request (tool definitions included, which a character count
cannot see), and it is stored on the turn. The ratio is not stored: chat may switch models between
turns, so the window is resolved where the selection is known — the model profile's registered
window, else the price registry behind it — and where neither knows it, no ratio is drawn at all.
"""

from __future__ import annotations

import logging
from typing import TypedDict

logger = logging.getLogger(__name__)

# Our provider names → genai-prices provider ids (an OpenAI-compatible server is looked up by model).
_REGISTRY_PROVIDERS = {
    "openai": "openai",
    "anthropic": "anthropic",
    "openrouter": "openrouter",
    "openai_compatible": None,
}


class ContextGauge(TypedDict, total=False):
    input_tokens: int
    window: int
    ratio: float


def registry_context_window(provider: str, model_name: str) -> int | None:
    """The window genai-prices records for the model, or None when it does not know it."""
    if provider not in _REGISTRY_PROVIDERS or not model_name:
        return None
    from genai_prices import data_snapshot

    try:
        _, model = data_snapshot.get_snapshot().find_provider_model(
            model_name, None, _REGISTRY_PROVIDERS[provider], None
        )
    except LookupError:
        return None
    return getattr(model, "context_window", None) or None


def context_window_of(profile) -> int | None:
    """The selected model's window: the profile's own figure first, then the price registry."""
    if profile is None:
        return None
    if profile.context_window:
        return int(profile.context_window)
    return registry_context_window(profile.provider, profile.model_name)


def context_gauge(input_tokens: int | None, window: int | None) -> ContextGauge | None:
    """The reading, with ``window`` and ``ratio`` only when the window is known."""
    if input_tokens is None:
        return None
    gauge: ContextGauge = {"input_tokens": int(input_tokens)}
    if window:
        gauge["window"] = int(window)
        gauge["ratio"] = round(int(input_tokens) / int(window), 4)
    return gauge


def selected_profile_of(agent):
    """The model profile the agent's published version selects (its organization's default when
    the spec names none), or None when it cannot be resolved. Reads only; never creates one."""
    from apps.agents.models import ModelProfile

    version = getattr(agent, "current_version", None)
    profile_id = None
    if version is not None:
        try:
            profile_id = version.frozen_spec.model_profile_id
        except Exception:  # a version whose spec no longer parses has no selection to report
            logger.warning(
                "agent %s: published spec did not parse for the context gauge",
                agent.pk,
                exc_info=True,
            )
            return None
    profiles = ModelProfile.objects.filter(organization_id=agent.organization_id)
    if profile_id is not None:
        return profiles.filter(pk=profile_id).first()
    return profiles.filter(is_default=True).first()
