"""ModelProfile → a pydantic-ai model. The one place a provider key is decrypted for a run."""

from __future__ import annotations

import functools
import ssl
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction
from pydantic_ai.models import Model

from apps.agents.models import ModelProfile, Provider
from apps.outbound.clients import async_client as outbound_async_client
from apps.vault.services import secret_reveal

from .gauge import context_window_of
from .offline import OFFLINE_MODEL_NAME, OfflineModel

OFFLINE_LABEL = "Offline model"
# The provider SDK's own retries of a 429/5xx before the run gives up on a request.
MODEL_CLIENT_MAX_RETRIES = 2
# An OpenAI-compatible server without a key (a local vLLM, llama.cpp …) still needs a non-empty one.
KEYLESS_PLACEHOLDER = "not-needed"
# A profile's request timeout unless it names its own (ModelProfile.request_timeout_seconds).
DEFAULT_REQUEST_TIMEOUT_SECONDS = 120


@functools.cache
def _tls_context() -> ssl.SSLContext:
    """One TLS context per process: building one loads the system's CA store, about 20 ms of CPU,
    which a worker starting fifty runs at once paid fifty times (docs/runner.md)."""
    from httpx2._config import create_ssl_context

    return create_ssl_context()


def _pinned_client():
    """The SDK's HTTP client for one run: the outbound check's transport (apps/outbound), so the
    vault key goes only to the address that passed the check when the request is sent — a
    profile's base_url was checked when it was saved, but what its name resolves to can change."""
    from openai import DEFAULT_CONNECTION_LIMITS

    return outbound_async_client(verify=_tls_context(), limits=DEFAULT_CONNECTION_LIMITS)


class ModelUnavailable(Exception):
    """The profile cannot be turned into a model (no key for a provider that needs one …)."""

    def __init__(self, sentence: str) -> None:
        self.sentence = sentence
        super().__init__(sentence)


@dataclass(frozen=True)
class ModelHandle:
    model: Model
    provider: str
    model_name: str
    label: str
    # Tokens, from the profile or the price registry; None when unknown (the gauge draws no ratio).
    context_window: int | None = None
    # The longest one model request may take before its run ends failed (the profile's own).
    request_timeout_seconds: float = DEFAULT_REQUEST_TIMEOUT_SECONDS
    # The SDK client built for this handle alone (an OpenAI or OpenAI-compatible profile): its
    # connection pool is the run's, closed when the run ends (``aclose``) rather than left open
    # until the garbage collector finds it — a worker finishes hundreds of runs a minute.
    own_client: Any = None

    async def aclose(self) -> None:
        if self.own_client is not None:
            await self.own_client.close()


def default_model_profile(organization) -> ModelProfile:
    """The organization's default profile; an organization with none gets the offline one."""
    profile = ModelProfile.objects.filter(organization=organization, is_default=True).first()
    if profile is not None:
        return profile
    try:
        with transaction.atomic():
            return ModelProfile.objects.create(
                organization=organization,
                label=OFFLINE_LABEL,
                provider=Provider.OFFLINE,
                model_name=OFFLINE_MODEL_NAME,
                is_default=True,
            )
    except IntegrityError:  # another request created it first
        return ModelProfile.objects.get(organization=organization, is_default=True)


def model_profile_for(organization, profile_id: int | None) -> ModelProfile:
    if profile_id is None:
        return default_model_profile(organization)
    profile = (
        ModelProfile.objects.filter(organization=organization, pk=profile_id)
        .select_related("secret")
        .first()
    )
    if profile is None:
        raise ModelUnavailable("The agent's model profile no longer exists in this organization.")
    return profile


def _key(profile: ModelProfile, *, required: bool) -> str | None:
    if profile.secret is None:
        if required:
            raise ModelUnavailable(
                f"The model profile {profile.label!r} has no API key in the vault."
            )
        return None
    return secret_reveal(profile.secret)


def profile_label(profile: ModelProfile) -> str:
    if profile.provider == Provider.OFFLINE:
        return (
            f"{profile.label} (offline)"
            if "offline" not in profile.label.lower()
            else profile.label
        )
    return f"{profile.label} ({profile.model_name})"


def build_model(profile: ModelProfile) -> ModelHandle:
    provider = profile.provider
    own_client: Any = None
    if provider == Provider.OFFLINE:
        model: Model = OfflineModel()
    elif provider in (Provider.OPENAI, Provider.OPENAI_COMPATIBLE):
        from openai import AsyncOpenAI
        from pydantic_ai.models.openai import OpenAIChatModel
        from pydantic_ai.providers.openai import OpenAIProvider

        key = _key(profile, required=provider == Provider.OPENAI) or KEYLESS_PLACEHOLDER
        client = AsyncOpenAI(
            base_url=profile.base_url or None,
            api_key=key,
            max_retries=MODEL_CLIENT_MAX_RETRIES,
            timeout=float(profile.request_timeout_seconds),
            http_client=_pinned_client(),
        )
        model = OpenAIChatModel(profile.model_name, provider=OpenAIProvider(openai_client=client))
        own_client = client
    elif provider == Provider.OPENROUTER:
        from pydantic_ai.models.openai import OpenAIChatModel
        from pydantic_ai.providers.openrouter import OpenRouterProvider

        model = OpenAIChatModel(
            profile.model_name, provider=OpenRouterProvider(api_key=_key(profile, required=True))
        )
    elif provider == Provider.ANTHROPIC:
        from anthropic import AsyncAnthropic
        from pydantic_ai.models.anthropic import AnthropicModel
        from pydantic_ai.providers.anthropic import AnthropicProvider

        anthropic_client = AsyncAnthropic(
            api_key=_key(profile, required=True),
            max_retries=MODEL_CLIENT_MAX_RETRIES,
            timeout=float(profile.request_timeout_seconds),
            http_client=_pinned_client(),
        )
        model = AnthropicModel(
            profile.model_name, provider=AnthropicProvider(anthropic_client=anthropic_client)
        )
        own_client = anthropic_client
    else:
        raise ModelUnavailable(f"The model provider {provider!r} is not supported.")
    return ModelHandle(
        model=model,
        provider=provider,
        model_name=profile.model_name,
        label=profile_label(profile),
        context_window=context_window_of(profile),
        request_timeout_seconds=float(profile.request_timeout_seconds),
        own_client=own_client,
    )
