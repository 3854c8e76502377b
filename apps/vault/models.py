"""Encrypted secrets of an organization."""

from django.db import models


class SecretPurpose(models.TextChoices):
    OPENAI = "openai", "OpenAI API key"
    ANTHROPIC = "anthropic", "Anthropic API key"
    OPENROUTER = "openrouter", "OpenRouter API key"
    OPENAI_COMPATIBLE = "openai_compatible", "OpenAI-compatible server key"
    CAPABILITY = "capability", "A capability's service key"
    CHANNEL = "channel", "A chat platform's token"
    OTHER = "other", "Other"
    # An MCP connection's bearer token: written and rotated only through its connection
    # (apps.mcp), so it is left out of the Keys page, the secrets API and a binding's key picker.
    MCP = "mcp", "An MCP connection's bearer token"


# What a person may pick when they store a key themselves.
USER_PURPOSES = [
    (value, label) for value, label in SecretPurpose.choices if value != SecretPurpose.MCP
]


class Secret(models.Model):
    """A value encrypted at rest with AGENTICOS_VAULT_KEY (Fernet).

    Write-only: the API and the admin accept a value and never return it; only the runner
    decrypts, at the moment it builds a model or a tool. ``purpose`` says what it is for, so a
    binding cannot be handed, say, a Slack token as its search key by mistake.
    """

    organization = models.ForeignKey(
        "orgs.Organization", on_delete=models.CASCADE, related_name="secrets"
    )
    name = models.CharField(max_length=100)
    purpose = models.CharField(max_length=32, choices=SecretPurpose.choices)
    ciphertext = models.BinaryField(editable=False)
    # The last four characters, so a person can tell two keys apart without seeing either.
    hint = models.CharField(max_length=8, blank=True, editable=False)
    created_by = models.ForeignKey(
        "orgs.User", on_delete=models.SET_NULL, null=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    rotated_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(
                fields=["organization", "name"], name="secret_name_unique_per_org"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.get_purpose_display()})"

    def __repr__(self) -> str:  # never the value, not even encrypted
        return f"<Secret {self.pk} {self.name!r}>"
