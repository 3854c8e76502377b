"""The agent spec: what a Builder edits as a draft and what a published version freezes.

A versioned pydantic model (``schema_version``) so a version published under an older schema can
still be read. Structural validation lives here (types, ranges, unknown keys); the publish rules
that need the registry, the vault or the organization live in ``apps.agents.validation``.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from agenticos.money import DEFAULT_BUDGET_WARN_AT, budget_warn_at_checked

ApprovalMode = Literal["default", "required", "never"]
SPEC_SCHEMA_VERSION: Literal[1] = 1


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ToolOverride(_Strict):
    """A binding's rename or re-description of one tool, keyed by the tool's stable id."""

    name: str | None = None
    description: str | None = None


class CapabilityBinding(_Strict):
    """One capability switched on for an agent, with its configuration."""

    id: str
    config: dict = Field(default_factory=dict)
    approval: ApprovalMode = "default"
    tool_approval: dict[str, ApprovalMode] = Field(default_factory=dict)
    tool_overrides: dict[str, ToolOverride] = Field(default_factory=dict)
    secret_id: int | None = None
    enabled: bool = True


class McpConnectionBinding(_Strict):
    """An MCP connection bound by id (apps.mcp). Its tools — the list fixed on the connection —
    reach the model as ``<prefix>_<tool>``; ``tool_overrides`` renames or re-describes one, keyed
    by the server's own tool name (its stable id). Approval is the connection's, not the spec's."""

    id: int
    tool_overrides: dict[str, ToolOverride] = Field(default_factory=dict)
    enabled: bool = True

    @model_validator(mode="before")
    @classmethod
    def _bare_id(cls, data):
        # "mcp_connections": [3] is shorthand for [{"id": 3}].
        return {"id": data} if isinstance(data, int) and not isinstance(data, bool) else data


DelegationMode = Literal["sync", "async", "auto"]


class DelegatePin(_Strict):
    """A delegate agent, pinned to one of its published versions.

    ``version`` None in a draft means "its current one"; publishing freezes the number it was
    then (a pin does not move on its own: seed 003, "Un delegado fijado no se mueve solo").
    ``mode`` overrides the subagents binding's mode for this delegate alone."""

    agent_id: int
    version: int | None = Field(default=None, ge=1)
    mode: DelegationMode | None = None


class Budget(_Strict):
    # The agent's own monthly cap in USD; None means only the organization's cap applies.
    monthly_usd: Decimal | None = Field(default=None, ge=0, max_digits=12, decimal_places=2)


class Limits(_Strict):
    # Model requests one run may make before it stops with a clear outcome.
    max_steps: int = Field(default=25, ge=1, le=500)


AudienceRole = Literal["admins", "owner", "initiator", "chosen"]


class AlertRule(_Strict):
    """Who an alert reaches: roles resolved when it is sent (seed 003, "Alertas"), plus the
    members named for ``chosen``."""

    audience: list[AudienceRole]
    chosen_user_ids: list[int] = Field(default_factory=list)


class BudgetAlertRule(AlertRule):
    """The budget alert: its audience, and the fractions of the agent's cap that warn it first."""

    warn_at: list[Decimal] = Field(
        default_factory=lambda: [Decimal(value) for value in DEFAULT_BUDGET_WARN_AT]
    )

    @field_validator("warn_at", mode="before")
    @classmethod
    def _warn_at_checked(cls, value) -> list[Decimal]:
        return budget_warn_at_checked(value)


def _report_audience() -> list[AudienceRole]:
    return ["admins", "owner"]


class UsageReport(_Strict):
    """The agent's usage report: weekly and/or monthly, off by default."""

    weekly: bool = False
    monthly: bool = False
    audience: list[AudienceRole] = Field(default_factory=_report_audience)
    chosen_user_ids: list[int] = Field(default_factory=list)


class Alerts(_Strict):
    # The agent's own cap reached: admins and the agent's owner unless the author says otherwise.
    budget: BudgetAlertRule = Field(
        default_factory=lambda: BudgetAlertRule(audience=["admins", "owner"])
    )
    # A call parked: whoever started the run and the admins.
    approvals: AlertRule = Field(
        default_factory=lambda: AlertRule(audience=["initiator", "admins"])
    )
    usage: UsageReport = Field(default_factory=UsageReport)

    @model_validator(mode="before")
    @classmethod
    def _read_first_schema(cls, data):
        # Versions published before per-alert audiences carried one ``notify`` list (applied to
        # the budget alert; ["admins"] was the schema's default, written into every spec) and
        # unused ``budget_thresholds``: still readable, so those versions still run.
        if isinstance(data, dict) and ("notify" in data or "budget_thresholds" in data):
            data = dict(data)
            notify = data.pop("notify", None)
            data.pop("budget_thresholds", None)
            if notify not in (None, ["admins"]) and "budget" not in data:
                data["budget"] = {"audience": notify}
        return data


class AgentSpec(_Strict):
    schema_version: Literal[1] = SPEC_SCHEMA_VERSION
    instructions: str = ""
    # A model profile of the organization; None means the organization's default profile.
    model_profile_id: int | None = None
    capabilities: list[CapabilityBinding] = Field(default_factory=list)
    mcp_connections: list[McpConnectionBinding] = Field(default_factory=list)
    context_ids: list[int] = Field(default_factory=list)
    knowledge_collections: list[int] = Field(default_factory=list)
    # The organization's skills bound to the skills capability (apps.knowledge.Skill ids).
    skill_ids: list[int] = Field(default_factory=list)
    # The published agents this one may delegate to (top level, where publish validation, the
    # YAML export and the permission model see them; the subagents binding holds the settings).
    subagents: list[DelegatePin] = Field(default_factory=list)
    budget: Budget = Field(default_factory=Budget)
    limits: Limits = Field(default_factory=Limits)
    alerts: Alerts = Field(default_factory=Alerts)

    @model_validator(mode="before")
    @classmethod
    def _read_delegates_spelling(cls, data):
        # Specs written before the field took the seed's name carried the pins as ``delegates``.
        if isinstance(data, dict) and "delegates" in data:
            data = dict(data)
            legacy = data.pop("delegates")
            data.setdefault("subagents", legacy)
        return data

    def binding(self, capability_id: str) -> CapabilityBinding | None:
        return next((b for b in self.capabilities if b.id == capability_id), None)

    def enabled_bindings(self) -> list[CapabilityBinding]:
        return [b for b in self.capabilities if b.enabled]

    def enabled_mcp_connections(self) -> list[McpConnectionBinding]:
        return [b for b in self.mcp_connections if b.enabled]
