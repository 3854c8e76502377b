from django.db.models import QuerySet

from .models import Secret, SecretPurpose


def secrets_for(organization) -> QuerySet[Secret]:
    """An organization's secrets, without the ciphertext column. MCP connection tokens are not
    among them: each belongs to its connection and is managed there (apps.mcp)."""
    return (
        Secret.objects.filter(organization=organization)
        .exclude(purpose=SecretPurpose.MCP)
        .defer("ciphertext")
    )
