"""What a model request costs: genai-prices for real providers, a fixed rate card offline.

genai-prices does not know every model. An unknown model is booked at 0 and the request is
marked unpriced, so its run's cost reads as a floor (seed 003, "Un coste que no se pudo medir
lo dice") instead of a guess.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from decimal import Decimal

from genai_prices import Usage, calc_price

logger = logging.getLogger(__name__)

MILLION = Decimal(1_000_000)
# MAP.md: the offline model's rate card, so spend is visible on a fresh machine.
OFFLINE_INPUT_USD_PER_MILLION = Decimal("3")
OFFLINE_OUTPUT_USD_PER_MILLION = Decimal("15")

# The provider name of models AgenticOS runs itself (the knowledge app's built-in embedder).
LOCAL_PROVIDER = "local"

# Our provider names → genai-prices provider ids (openai_compatible servers are priced by model name).
GENAI_PROVIDER_IDS = {
    "openai": "openai",
    "anthropic": "anthropic",
    "openrouter": "openrouter",
    "openai_compatible": None,
}


@dataclass(frozen=True)
class Price:
    cost_usd: Decimal
    priced: bool


def offline_price(input_tokens: int, output_tokens: int) -> Decimal:
    return (
        Decimal(input_tokens) * OFFLINE_INPUT_USD_PER_MILLION
        + Decimal(output_tokens) * OFFLINE_OUTPUT_USD_PER_MILLION
    ) / MILLION


# Models genai-prices has no entry for, remembered so each is logged once per process.
_UNKNOWN_MODELS: set[tuple[str, str]] = set()


def price_usage(provider: str, model_name: str, input_tokens: int, output_tokens: int) -> Price:
    """The cost of one request of ``model_name`` at ``provider``."""
    if provider == "offline":
        return Price(offline_price(input_tokens, output_tokens), True)
    if provider == LOCAL_PROVIDER:
        # A model run on this machine's CPU (the built-in embedder): free, and priced as such.
        return Price(Decimal("0"), True)
    key = (provider, model_name)
    if key in _UNKNOWN_MODELS:
        return Price(Decimal("0"), False)
    try:
        result = calc_price(
            Usage(input_tokens=input_tokens, output_tokens=output_tokens),
            model_ref=model_name,
            provider_id=GENAI_PROVIDER_IDS.get(provider, provider),
        )
    except LookupError:
        _UNKNOWN_MODELS.add(key)
        logger.warning(
            "no price for model %r of provider %r: booked at 0, run marked partial",
            model_name,
            provider,
        )
        return Price(Decimal("0"), False)
    return Price(Decimal(result.total_price), True)
