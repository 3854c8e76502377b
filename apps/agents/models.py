"""Agents, their frozen versions and the organization's model profiles."""

from __future__ import annotations

from django.core.validators import MinValueValidator
from django.db import models

from .spec import AgentSpec


class AgentStatus(models.TextChoices):
    ACTIVE = "active", "Active"
    # Archiving is a state, not a delete: runs, ledger entries and audit rows keep pointing here.
    ARCHIVED = "archived", "Archived"


class Agent(models.Model):
    """An agent of an organization: an editable draft spec plus numbered published versions."""

    organization = models.ForeignKey(
        "orgs.Organization", on_delete=models.CASCADE, related_name="agents"
    )
    name = models.CharField(max_length=120)
    description = models.CharField(max_length=500, blank=True)
    status = models.CharField(
        max_length=16, choices=AgentStatus.choices, default=AgentStatus.ACTIVE
    )
    # The draft: what the Builder edits. Validated structurally on every save (AgentSpec).
    draft_spec = models.JSONField(default=dict)
    current_version = models.ForeignKey(
        "agents.AgentVersion", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    # The organization's AgenticOS template agent (one per organization).
    is_template = models.BooleanField(default=False)
    created_by = models.ForeignKey(
        "orgs.User", on_delete=models.SET_NULL, null=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        permissions = [
            ("run_agent", "Can run the agent"),
            ("publish_agent", "Can publish the agent"),
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["organization"],
                condition=models.Q(is_template=True),
                name="agent_one_template_per_org",
            ),
        ]
        indexes = [
            # The agent list of an organization, by name, without archived ones.
            models.Index(
                fields=["organization", "status", "name"], name="agent_org_status_name_idx"
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def draft(self) -> AgentSpec:
        return AgentSpec.model_validate(self.draft_spec or {})


class AgentVersion(models.Model):
    """A published version: a frozen spec, numbered per agent. Never edited after creation."""

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    spec = models.JSONField()
    published_by = models.ForeignKey(
        "orgs.User", on_delete=models.SET_NULL, null=True, related_name="+"
    )
    published_at = models.DateTimeField(auto_now_add=True)
    note = models.CharField(max_length=500, blank=True)

    class Meta:
        ordering = ["agent", "-number"]
        constraints = [
            models.UniqueConstraint(fields=["agent", "number"], name="agent_version_number_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.agent} v{self.number}"

    @property
    def frozen_spec(self) -> AgentSpec:
        return AgentSpec.model_validate(self.spec)


class Provider(models.TextChoices):
    OPENAI = "openai", "OpenAI"
    ANTHROPIC = "anthropic", "Anthropic"
    OPENROUTER = "openrouter", "OpenRouter"
    OPENAI_COMPATIBLE = "openai_compatible", "OpenAI-compatible server"
    OFFLINE = "offline", "Offline model (deterministic, no provider)"


class ModelProfile(models.Model):
    """A model an organization's agents can use: provider, model name, key, context window.

    With no provider key configured, the organization's default is the offline profile, labelled
    as offline everywhere it appears.
    """

    organization = models.ForeignKey(
        "orgs.Organization", on_delete=models.CASCADE, related_name="model_profiles"
    )
    label = models.CharField(max_length=100)
    provider = models.CharField(max_length=32, choices=Provider.choices)
    model_name = models.CharField(max_length=200)
    base_url = models.URLField(blank=True, help_text="Only for an OpenAI-compatible server.")
    secret = models.ForeignKey(
        "vault.Secret", on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    # Tokens; None when unknown (the context gauge is then omitted, never guessed).
    context_window = models.PositiveIntegerField(null=True, blank=True)
    # The longest one model request may take; a hung provider ends its run failed at this bound
    # instead of holding a worker's slot (docs/runner.md "Provider timeouts").
    request_timeout_seconds = models.PositiveIntegerField(
        default=120,
        validators=[MinValueValidator(1)],
        help_text="Seconds one model request may take.",
    )
    is_default = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["label"]
        constraints = [
            models.UniqueConstraint(
                fields=["organization"],
                condition=models.Q(is_default=True),
                name="model_profile_one_default_per_org",
            ),
            models.CheckConstraint(
                condition=~models.Q(provider="openai_compatible") | ~models.Q(base_url=""),
                name="model_profile_compatible_needs_base_url",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.label} ({self.get_provider_display()})"

    @property
    def is_offline(self) -> bool:
        return self.provider == Provider.OFFLINE


class SandboxConnection(models.Model):
    """A sandbox service an operator registered for an organization (seed 000, Sandbox).

    Where a ``service`` workspace runs is a property of the connection, so naming the connection
    names the kind. A binding's ``connection_id`` is this row's ``name``; ``None`` takes the
    organization's default. Publish refuses a service workspace when the organization has no
    connection, when the named one no longer exists, or when it has no credential — each by its
    name, because all three are states a deployment reaches after an agent was published.
    """

    organization = models.ForeignKey(
        "orgs.Organization", on_delete=models.CASCADE, related_name="sandbox_connections"
    )
    name = models.SlugField(max_length=64, help_text="What a binding's connection_id names.")
    label = models.CharField(max_length=100)
    base_url = models.URLField()
    secret = models.ForeignKey(
        "vault.Secret", on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    is_default = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["label"]
        constraints = [
            models.UniqueConstraint(
                fields=["organization", "name"], name="sandbox_connection_name_unique"
            ),
            models.UniqueConstraint(
                fields=["organization"],
                condition=models.Q(is_default=True),
                name="sandbox_connection_one_default",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.label} ({self.name})"
