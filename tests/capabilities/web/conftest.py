"""Every web test runs inside a :class:`LoopbackOnlyNetwork` with a fake web on 127.0.0.1.

``site`` plays public sites: ``news.example`` and ``docs.example`` resolve to public-looking
addresses that the network translates to the fake, so pydantic-ai's SSRF guard sees what it would
see on the internet while every packet stays on loopback.
"""

from __future__ import annotations

import pytest

from .fakes import FakeWeb
from .netguard import LoopbackOnlyNetwork

# Public-looking addresses (outside every private, reserved and documentation range).
NEWS_IP = "93.184.215.14"
DOCS_IP = "151.101.1.69"


@pytest.fixture
def site():
    with FakeWeb() as web:
        yield web


@pytest.fixture
def network(monkeypatch, site):
    net = LoopbackOnlyNetwork().install(monkeypatch)
    net.answer("news.example", NEWS_IP)
    net.answer("docs.example", DOCS_IP)
    net.serve(NEWS_IP, site.port)
    net.serve(DOCS_IP, site.port)
    yield net
    # Whatever the test checked, nothing may have tried to leave loopback unannounced.
    unexpected = [r for r in net.refused if r not in net.expected_refusals]
    assert not unexpected, f"a connection tried to leave 127.0.0.1: {unexpected}"


def url(site, host: str, path: str = "/") -> str:
    return f"http://{host}:{site.port}{path}"
