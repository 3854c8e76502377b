"""The Builder's "Where this agent is available" section: the agent's bindings (webhook URL,
test credentials, disable or enable, their runs in Activity) and the form that adds one.

The Builder (``apps.agents.views``) asks for the section's context here, as it does the MCP
section's (``apps.mcp.builder``), and includes ``channels/_builder_section.html`` outside its own
form: each binding's buttons and the new binding's form post to this app's views, which send the
person back to the section. Every key is prefixed ``channel_`` so nothing collides with the
Builder's own context.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings

from apps.agents.selectors import can
from apps.vault.models import SecretPurpose
from apps.vault.selectors import secrets_for

from . import selectors, services
from .choices import Platform, UnlinkedSenders

TEST_RESULT_SESSION_KEY = "channel_test_result"


def channels_section(request, agent) -> dict[str, Any]:
    """The section's context for the person viewing the Builder."""
    bindings = selectors.bindings_visible_to(request.user, agent.organization).filter(agent=agent)
    can_bind = can(request.user, agent, "publish")
    return {
        "channel_rows": [
            {"binding": binding, "webhook_url": services.webhook_url(binding)}
            for binding in bindings.order_by("created_at", "pk")
        ],
        "channel_can_bind": can_bind,
        "channel_platforms": Platform.choices,
        "channel_unlinked_choices": UnlinkedSenders.choices,
        # Only someone who may bind is shown the vault's chat secrets to choose from.
        "channel_secrets": (
            list(secrets_for(agent.organization).filter(purpose=SecretPurpose.CHANNEL))
            if can_bind
            else []
        ),
        "channel_test_result": request.session.pop(TEST_RESULT_SESSION_KEY, None),
        "channel_default_limit": settings.CHANNEL_SENDER_MESSAGES_PER_MINUTE,
    }
