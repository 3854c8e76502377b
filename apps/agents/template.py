"""The AgenticOS template agent: what a new organization starts with, and what New agent is.

Seed 000: the capabilities the starting agent has — the AgenticOS template, which a new
organization receives on its first boot — carry the Recommended badge, and an agent created with
New agent starts with exactly those switched on, configured as the template configures them,
together with its instructions and budget. Its author switches off what the agent must not do.

The template is code, like the registry it is drawn from: one function builds it, the setup hook
(``services.ensure_template_agent``) installs it once per organization, and New agent calls the same function — so the two cannot
drift apart.
"""

from __future__ import annotations

from decimal import Decimal

from apps.capabilities.registry import all_capabilities

from .spec import AgentSpec, Budget, CapabilityBinding

TEMPLATE_AGENT_NAME = "AgenticOS"
TEMPLATE_AGENT_DESCRIPTION = "The organization's starting agent: every recommended capability this deployment offers, ready to use."
# A starting agent with a cap of its own, so a new organization sees spend governed from day one;
# the organization's own cap (DEFAULT_ORG_MONTHLY_BUDGET_USD) still applies above it.
TEMPLATE_MONTHLY_BUDGET_USD = Decimal("25.00")

TEMPLATE_INSTRUCTIONS = """\
You are AgenticOS, this organization's general-purpose assistant.

Help the person in front of you get their work done: answer directly, show your reasoning when it \
matters, and say plainly when you are unsure or could not do something. Use the tools listed \
under "Your setup" when they make the answer better — calculate instead of estimating, plan \
longer work, and ask the person when a decision is theirs to make. Never claim a tool you do not \
have, and never claim to have done something a tool did not do.\
"""


def template_bindings() -> list[CapabilityBinding]:
    """The registry's recommended capabilities that this deployment has built, each bound with
    its defaults and approvals. A recommended capability joins the template the day its tools
    exist; until then New agent would switch on something no run can use."""
    return [
        CapabilityBinding(id=cap.id)
        for cap in all_capabilities()
        if cap.recommended and cap.available
    ]


def template_spec() -> AgentSpec:
    """The AgenticOS template's spec. New agent starts from exactly this."""
    return AgentSpec(
        instructions=TEMPLATE_INSTRUCTIONS,
        capabilities=template_bindings(),
        budget=Budget(monthly_usd=TEMPLATE_MONTHLY_BUDGET_USD),
    )


def new_agent_spec() -> dict:
    """The draft of an agent created with New agent: the template's spec, as JSON."""
    return template_spec().model_dump(mode="json")
