"""The memory app's publish rule, registered with the agents app's validation."""

from django.conf import settings

from apps.agents.validation import PublishError
from apps.capabilities.tools.mem0 import base_url_refusal

from .selectors import missing_context_ids


def check_context_ids(spec, organization) -> list[PublishError]:
    """Every context id a spec binds names a context file of the organization."""
    missing = missing_context_ids(organization.pk, spec.context_ids)
    return [
        PublishError(
            "context",
            "context_ids",
            f"there is no context file {file_id} in this organization; remove it or pick another",
        )
        for file_id in missing
    ]


def check_mem0_base_url(spec, organization) -> list[PublishError]:
    """A self-hosted mem0 must be https and in MEM0_ALLOWED_HOSTS (an empty list refuses every
    self-hosted server). Also checked at assembly: the runner re-runs the publish rules."""
    errors = []
    for binding in spec.capabilities:
        if binding.id != "memory_mem0":
            continue
        base_url = (binding.config or {}).get("base_url")
        refusal = base_url_refusal(base_url, settings.MEM0_ALLOWED_HOSTS)
        if refusal is not None:
            errors.append(PublishError("memory_mem0", "config.base_url", refusal))
    return errors
