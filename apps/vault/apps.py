from django.apps import AppConfig


class VaultConfig(AppConfig):
    """The organization's secrets vault. Its own home because agents (capability keys), runs
    (provider keys) and chat channels (bot tokens) all draw on it, and none should own it."""

    name = "apps.vault"
    label = "vault"
    default_auto_field = "django.db.models.BigAutoField"
