"""The typed environment readers fail loudly on malformed values."""

from decimal import Decimal

import pytest
from django.core.exceptions import ImproperlyConfigured

from agenticos.settings.env import env_bool, env_int, env_optional_decimal, parse_database_url


def test_int_reader_names_the_variable(monkeypatch):
    monkeypatch.setenv("APPROVAL_EXPIRY_HOURS", "three")
    with pytest.raises(ImproperlyConfigured, match="APPROVAL_EXPIRY_HOURS"):
        env_int("APPROVAL_EXPIRY_HOURS", 72)


def test_int_reader_enforces_minimum(monkeypatch):
    monkeypatch.setenv("STALE_RUN_REAPED_AFTER_HOURS", "-1")
    with pytest.raises(ImproperlyConfigured):
        env_int("STALE_RUN_REAPED_AFTER_HOURS", 6, minimum=0)


def test_bool_reader(monkeypatch):
    monkeypatch.setenv("DEBUG", "maybe")
    with pytest.raises(ImproperlyConfigured):
        env_bool("DEBUG", False)
    monkeypatch.setenv("DEBUG", "yes")
    assert env_bool("DEBUG", False) is True


def test_decimal_reader(monkeypatch):
    monkeypatch.setenv("DEFAULT_ORG_MONTHLY_BUDGET_USD", "12.5")
    assert env_optional_decimal("DEFAULT_ORG_MONTHLY_BUDGET_USD", None) == Decimal("12.5")
    monkeypatch.setenv("DEFAULT_ORG_MONTHLY_BUDGET_USD", "NaN")
    with pytest.raises(ImproperlyConfigured):
        env_optional_decimal("DEFAULT_ORG_MONTHLY_BUDGET_USD", None)


def test_database_url_is_postgres_only():
    with pytest.raises(ImproperlyConfigured, match="PostgreSQL only"):
        parse_database_url("sqlite:///db.sqlite3")
    parsed = parse_database_url("postgresql://u:p%40ss@db.example:6543/agenticos")
    assert (parsed["HOST"], parsed["PORT"], parsed["PASSWORD"], parsed["NAME"]) == (
        "db.example",
        "6543",
        "p@ss",
        "agenticos",
    )
    socket = parse_database_url("postgresql://postgres:@/agenticos?host=/tmp/pg")
    assert socket["HOST"] == "/tmp/pg"


def test_defaults_match_the_map(settings):
    assert settings.DEFAULT_ORG_MONTHLY_BUDGET_USD == Decimal("100")
    assert settings.APPROVAL_EXPIRY_HOURS == 72
    assert settings.STALE_RUN_REAPED_AFTER_HOURS == 6
    assert settings.QUESTION_EXPIRY_HOURS == 24
    assert settings.MEM0_ALLOWED_HOSTS == [] and settings.BROWSER_CDP_ALLOWED_HOSTS == []
    assert settings.BROWSER_TZ == "UTC" and settings.BROWSER_LANG == "en-US"
    assert len(settings.DEFAULT_GRANTED_SCOPES) == 8
