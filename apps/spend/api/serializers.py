"""The read models of GET /spend and GET /stats/usage: money as strings (a float would round what
a finance team reconciles), dates as ISO strings."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from apps.spend.filters import SpendWindow


def _plain(value: Any) -> Any:
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return value


def spend_payload(overview: dict) -> dict:
    window: SpendWindow = overview["window"]
    return _plain(
        {
            **window.as_dict(),
            "total": overview["total"],
            "organization": overview["organization"],
            "by_agent": overview["by_agent"],
            "by_provider": overview["by_provider"],
            "by_key": overview["by_key"],
            "by_user": overview["by_user"],
            "daily": overview["daily"],
        }
    )


def usage_payload(stats: dict, *, scope: str) -> dict:
    window: SpendWindow = stats["window"]
    return _plain(
        {
            **window.as_dict(),
            "scope": scope,
            "total_runs": stats["total_runs"],
            "tokens": stats["tokens"],
            "cost": stats["cost"],
            "daily": stats["daily"],
        }
    )


def usage_cards_payload(cards: dict) -> dict:
    """The dashboard cards' blocks (apps/spend/usage_cards.py), money as strings."""
    return _plain(cards)
