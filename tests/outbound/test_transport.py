"""The pinned transport: every request (each redirect too) is checked, and sent to the address
that was judged, under the host's own name."""

from __future__ import annotations

import asyncio

import httpx
import httpx2
import pytest

from apps.outbound.clients import (
    async_client,
    client,
    legacy_async_client,
    legacy_client,
    refusal_in,
)
from tests.capabilities.web.fakes import Page

from .conftest import PUBLIC_IP
from .test_check import CORPUS

pytestmark = pytest.mark.usefixtures("network")


def _get(make, url):
    with make(timeout=5) as http:
        return http.get(url)


@pytest.mark.parametrize("make", [client, legacy_client], ids=["httpx2", "httpx"])
def test_a_public_name_is_dialled_at_its_checked_address_under_its_name(make, network, site):
    site.route("news.example", "/ok", Page("fine"))
    answer = _get(make, f"http://news.example:{site.port}/ok")
    assert answer.status_code == 200 and answer.text == "fine"
    assert [(r.host, r.path) for r in site.requests] == [("news.example", "/ok")]
    assert network.connected == [(PUBLIC_IP, site.port)]
    # One lookup, by the check: the HTTP client never resolved the name on its own.
    assert network.lookups == ["news.example"]


@pytest.mark.parametrize("make", [client, legacy_client], ids=["httpx2", "httpx"])
def test_dns_rebinding_cannot_move_a_pinned_request(make, network, site):
    network.answer("rebind.example", PUBLIC_IP, "10.0.0.7")
    site.route("rebind.example", "/start", Page.redirect("/inside"))
    site.route("rebind.example", "/inside", Page("you should not see this"))
    with pytest.raises((httpx.ConnectError, httpx2.ConnectError)) as failed:
        _get(make, f"http://rebind.example:{site.port}/start")
    refused = refusal_in(failed.value)
    assert refused.kind == "private" and refused.address == "10.0.0.7"
    assert [r.path for r in site.requests] == ["/start"]
    assert network.connected == [(PUBLIC_IP, site.port)]


@pytest.mark.parametrize("target", CORPUS)
def test_a_redirect_into_the_corpus_is_refused_at_the_hop(target, network, site):
    site.route("news.example", "/go", Page.redirect(target))
    # Refused by the check, or — for octal spellings httpx2 will not parse in a Location — by
    # the client before any hop: either way the hop is never dialled.
    with pytest.raises((httpx2.ConnectError, httpx2.RemoteProtocolError)) as failed:
        _get(client, f"http://news.example:{site.port}/go")
    assert isinstance(failed.value, httpx2.RemoteProtocolError) or refusal_in(failed.value)
    assert [r.path for r in site.requests] == ["/go"]
    assert set(network.connected) == {(PUBLIC_IP, site.port)}


@pytest.mark.parametrize("make", [async_client, legacy_async_client], ids=["httpx2", "httpx"])
def test_the_async_clients_check_and_pin_too(make, network, site):
    site.route("news.example", "/ok", Page("fine"))
    site.route("news.example", "/meta", Page.redirect("http://169.254.169.254/latest/"))

    async def go():
        async with make(timeout=5) as http:
            ok = await http.get(f"http://news.example:{site.port}/ok")
            with pytest.raises((httpx.ConnectError, httpx2.ConnectError)) as failed:
                await http.get(f"http://news.example:{site.port}/meta")
            return ok, refusal_in(failed.value)

    ok, refused = asyncio.run(go())
    assert ok.text == "fine" and refused.kind == "metadata"
    assert [r.path for r in site.requests] == ["/ok", "/meta"]


def test_the_clients_ignore_proxies_from_the_environment(monkeypatch, network, site):
    # A proxy would make the connection instead of the pinned transport.
    monkeypatch.setenv("HTTP_PROXY", "http://10.9.9.9:3128")
    monkeypatch.setenv("ALL_PROXY", "http://10.9.9.9:3128")
    site.route("news.example", "/ok", Page("fine"))
    assert _get(client, f"http://news.example:{site.port}/ok").text == "fine"
    assert _get(legacy_client, f"http://news.example:{site.port}/ok").text == "fine"
    assert network.refused == []


@pytest.mark.parametrize("make, library", [(client, httpx2), (legacy_client, httpx)])
def test_a_refusal_is_the_librarys_connect_error_caused_by_the_rule(make, library, network):
    """Every caller already handles a server it cannot reach; a refused address is one, and the
    rule stays findable for whoever may say it (a connection's own Test, the operator's log)."""
    with pytest.raises(library.ConnectError) as failed:
        _get(make, "http://internal.example/")
    assert refusal_in(failed.value).kind == "private"
    assert "10.1.2.3" not in str(failed.value)
