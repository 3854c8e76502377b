from django.db.models import QuerySet

from .models import Secret


def secrets_for(organization) -> QuerySet[Secret]:
    """An organization's secrets, without the ciphertext column."""
    return Secret.objects.filter(organization=organization).defer("ciphertext")
