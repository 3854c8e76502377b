"""thinking: asks the model to reason before answering. No tools: it changes how the model works,
not what it can reach.

``effort`` (``minimal`` … ``max``; unset is the provider's own default effort, ``thinking=True``) maps to pydantic-ai's
unified ``thinking`` model setting. pydantic-ai translates it per provider and model (OpenAI's
``reasoning_effort``, Anthropic's effort/budget, …) and falls back to the nearest level a model
has — ``max`` becomes ``xhigh`` on OpenAI, ``xhigh`` becomes ``max`` or ``high`` on Claude models
without it — so a spec stays portable when its model changes.
"""

from __future__ import annotations

from typing import Any

from ._toolsets import parsed_config

CAPABILITY_ID = "thinking"
# The offline model does not reason; a setting would only be ignored.
NO_REASONING_PROVIDERS = frozenset({"offline"})


def thinking_model_settings(binding, provider: str) -> dict[str, Any]:
    if provider in NO_REASONING_PROVIDERS:
        return {}
    effort = parsed_config(CAPABILITY_ID, binding).effort
    # Bound with no effort: reason, at the provider's own default effort.
    return {"thinking": True if effort is None else effort}


def build_thinking_toolset(binding, context):
    return None  # no tools, on purpose
