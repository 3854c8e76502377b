"""A binding's bot: its decrypted credentials, its platform client, and the channel it is in.

Credentials are decrypted here, at the moment a client is made, and never logged or stored
elsewhere (the vault keeps them sealed: apps.vault).
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

from apps.capabilities.tools.channel_tools import ChannelRefused
from apps.vault.services import SecretUnreadable, secret_reveal

from .choices import Platform
from .platforms import PlatformError, client_for


class BotUnavailable(Exception):
    """The binding's credentials cannot be read (a secret deleted, or sealed with another key)."""


def bot_token(binding) -> str:
    if binding.bot_token_id is None:
        raise BotUnavailable("the binding has no bot token")
    try:
        return secret_reveal(binding.bot_token)
    except SecretUnreadable as exc:
        raise BotUnavailable(f"the bot token of {binding.name} cannot be read") from exc


def verification_secret(binding) -> str | None:
    if binding.verification_secret_id is None:
        return None
    try:
        return secret_reveal(binding.verification_secret)
    except SecretUnreadable:
        return None  # an unreadable secret verifies nothing: every call is refused


def server_host(binding) -> str:
    return (urlsplit(binding.server_url).hostname or "").lower()


def client_of(binding, *, team_id: str = ""):
    return client_for(
        binding.platform, bot_token(binding), server_url=binding.server_url, team_id=team_id
    )


@dataclass
class BoundChannel:
    """channel_tools' access (apps.capabilities.tools.channel_tools.ChannelAccess): one channel,
    the one the message arrived in, through the bot's own client. A platform refusal becomes a
    ``ChannelRefused`` the model reads."""

    client: object
    target: dict
    platform: str

    @property
    def can_search(self) -> bool:
        return self.platform != Platform.TELEGRAM

    @property
    def can_read_history(self) -> bool:
        return self.platform != Platform.TELEGRAM

    @property
    def members_note(self) -> str:
        return (
            " (Telegram lists a chat's administrators only)"
            if self.platform == Platform.TELEGRAM
            else ""
        )

    def _call(self, name: str, *args):
        try:
            return getattr(self.client, name)(*args)
        except PlatformError as exc:
            raise ChannelRefused(exc.sentence) from None

    def info(self) -> dict:
        return self._call("channel_info", self.target)

    def members(self, limit: int):
        return self._call("channel_members", self.target, limit)

    def search(self, query: str, limit: int):
        return self._call("search_channels", query, limit)

    def history(self, limit: int):
        return self._call("history", self.target, limit)
