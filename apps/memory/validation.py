"""The memory app's publish rule, registered with the agents app's validation."""

from apps.agents.validation import PublishError

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
