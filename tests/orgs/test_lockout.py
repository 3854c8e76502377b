"""Sign-in lockout per account, and which proxies may say who the client is (issue 32, item 8).

The prober got in while the account was locked: the lockout keyed on (account, address) only,
and uvicorn believed ``X-Forwarded-For`` from any loopback connection, so a forged header was a
fresh address. Now an account has a ceiling across addresses, and the server believes forwarded
headers only from the proxies an operator names in FORWARDED_ALLOW_IPS (default: none).
"""

from __future__ import annotations

import asyncio

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import override_settings
from uvicorn.config import Config
from uvicorn.main import main as uvicorn_command

from agenticos.settings.env import env_forwarded_allow_ips, uvicorn_proxy_arguments
from apps.audit.models import AuditEntry
from tests.factories import DEFAULT_PASSWORD


def _sign_in(client, email, password, address):
    return client.post("/login/", {"username": email, "password": password}, REMOTE_ADDR=address)


@override_settings(AXES_FAILURE_LIMIT=3, ACCOUNT_LOCKOUT_FAILURE_LIMIT=6)
def test_wrong_passwords_from_many_addresses_lock_the_account_everywhere(client, org, member):
    # Two from each of three addresses: no pair reaches its limit of 3, the account reaches 6.
    for n in range(6):
        response = _sign_in(client, member.email, "wrong-password", f"10.8.0.{n // 2}")
        assert response.status_code == (429 if n == 5 else 200)
    # The right password, from an address never seen, is refused until the cool-off passes.
    assert _sign_in(client, member.email, DEFAULT_PASSWORD, "10.8.9.9").status_code == 429
    assert "_auth_user_id" not in client.session
    # The person's organization sees it.
    assert AuditEntry.objects.filter(action="auth.lockout", organization=org).exists()


@override_settings(AXES_FAILURE_LIMIT=3, ACCOUNT_LOCKOUT_FAILURE_LIMIT=6)
def test_below_the_ceiling_another_address_still_signs_in(client, org, member):
    for n in range(5):
        _sign_in(client, member.email, "wrong-password", f"10.8.1.{n}")
    assert _sign_in(client, member.email, DEFAULT_PASSWORD, "10.8.2.1").status_code == 302


@override_settings(AXES_FAILURE_LIMIT=3, ACCOUNT_LOCKOUT_FAILURE_LIMIT=6)
def test_the_ceiling_counts_one_account_not_its_neighbours(client, org, member, owner):
    for n in range(6):
        _sign_in(client, member.email, "wrong-password", f"10.8.3.{n}")
    assert _sign_in(client, owner.email, DEFAULT_PASSWORD, "10.8.3.0").status_code == 302


@override_settings(AXES_FAILURE_LIMIT=3, ACCOUNT_LOCKOUT_FAILURE_LIMIT=0)
def test_a_ceiling_of_zero_is_off(client, org, member):
    for n in range(8):
        _sign_in(client, member.email, "wrong-password", f"10.8.4.{n}")
    assert _sign_in(client, member.email, DEFAULT_PASSWORD, "10.8.5.1").status_code == 302


# --- forwarded headers ------------------------------------------------------------------------


def _client_seen_by_the_app(arguments: list[str], *, peer: str, forwarded: str) -> str:
    """Start uvicorn's real configuration from the command line ``arguments`` and ask what client
    address the application sees for a connection from ``peer`` carrying X-Forwarded-For."""
    params = uvicorn_command.make_context("uvicorn", ["app:app", *arguments]).params
    seen: dict = {}

    async def app(scope, receive, send):
        seen["client"] = scope["client"][0]

    config = Config(
        app,
        proxy_headers=params["proxy_headers"],
        forwarded_allow_ips=params["forwarded_allow_ips"],
        lifespan="off",
    )
    config.load()
    scope = {
        "type": "http",
        "client": (peer, 50000),
        "scheme": "http",
        "headers": [(b"x-forwarded-for", forwarded.encode())],
    }
    asyncio.run(config.loaded_app(scope, None, None))
    return seen["client"]


def test_by_default_a_forged_forwarded_header_from_loopback_is_ignored(monkeypatch):
    monkeypatch.delenv("FORWARDED_ALLOW_IPS", raising=False)
    arguments = uvicorn_proxy_arguments()
    assert arguments == ["--no-proxy-headers"]
    seen = _client_seen_by_the_app(arguments, peer="127.0.0.1", forwarded="203.0.113.7")
    assert seen == "127.0.0.1"


def test_a_configured_proxy_is_believed_and_no_one_else(monkeypatch):
    monkeypatch.setenv("FORWARDED_ALLOW_IPS", "10.9.0.0/16")
    arguments = uvicorn_proxy_arguments()
    assert _client_seen_by_the_app(arguments, peer="10.9.3.4", forwarded="203.0.113.7") == (
        "203.0.113.7"
    )
    assert _client_seen_by_the_app(arguments, peer="127.0.0.1", forwarded="203.0.113.7") == (
        "127.0.0.1"
    )


@pytest.mark.parametrize("value", ["proxy.internal", "10.0.0.1,nope", "300.1.1.1"])
def test_a_bad_proxy_list_fails_at_start(monkeypatch, value):
    monkeypatch.setenv("FORWARDED_ALLOW_IPS", value)
    with pytest.raises(ImproperlyConfigured, match="FORWARDED_ALLOW_IPS"):
        env_forwarded_allow_ips()


def test_the_launcher_starts_uvicorn_with_the_proxy_setting(monkeypatch):
    from agenticos.launcher import _children

    monkeypatch.delenv("FORWARDED_ALLOW_IPS", raising=False)
    assert "--no-proxy-headers" in _children(8000, 1, 50)["web"]
    monkeypatch.setenv("FORWARDED_ALLOW_IPS", "192.0.2.10")
    web = _children(8000, 1, 50)["web"]
    assert web[web.index("--forwarded-allow-ips") + 1] == "192.0.2.10"
