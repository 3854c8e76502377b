"""The outbound check itself: an SSRF corpus, malformed URLs, the allow-list and its settings."""

from __future__ import annotations

from ipaddress import ip_network

import pytest
from django.core.checks import Error, Warning

from agenticos.checks import check_configuration
from apps.outbound import allowlist
from apps.outbound.addresses import NOBODY, Refused, check_url, field_error

from .conftest import PUBLIC_IP

# Forty-odd ways to name an address this deployment must not dial, each refused before any
# connection. Names resolve through the test's resolver (conftest.py).
CORPUS = [
    # private IPv4, shared address space, and private IPv6
    "http://10.0.0.1/",
    "http://172.16.5.4/admin",
    "https://192.168.1.1:8443/",
    "http://100.64.0.1/",
    "http://[fc00::1]/",
    "http://[fd12:3456:789a::1]:8080/",
    # loopback and "this host"
    "http://127.0.0.1/",
    "http://127.255.255.254:6379/",
    "http://localhost:8000/",
    "http://localhost./",
    "http://[::1]/",
    "http://0.0.0.0/",
    "http://[::]/",
    "http://0/",
    # link-local
    "http://169.254.1.1/",
    "http://[fe80::1]/",
    "http://[fe80::1%25eth0]/",
    # cloud metadata
    "http://169.254.169.254/latest/meta-data/",
    "http://169.254.169.254./latest/meta-data/",
    "http://[fd00:ec2::254]/",
    "http://metadata.google.internal/computeMetadata/v1/",
    "http://169.254.170.2/v2/credentials",
    "http://100.100.100.200/latest/meta-data/",
    "http://168.63.129.16/machine",  # Azure's, a public address
    "http://[fd20:ce::254]/",
    # numbers the C library reads as addresses
    "http://2130706433/",  # 127.0.0.1, decimal
    "http://0177.0.0.1/",  # octal
    "http://0x7f.0.0.1/",  # hex octet
    "http://0x7f000001/",  # hex whole
    "http://127.1/",  # short form
    "http://2852039166/",  # 169.254.169.254, decimal
    "http://0251.0376.0251.0376/",  # the same, octal
    "http://0xa9fea9fe/",  # the same, hex
    "http://167772161/",  # 10.0.0.1, decimal
    # IPv6 carrying an IPv4 inside
    "http://[::ffff:127.0.0.1]/",
    "http://[::ffff:a9fe:a9fe]/",
    "http://[::ffff:10.0.0.1]/",
    "http://[64:ff9b::a9fe:a9fe]/",
    "http://[2002:a9fe:a9fe::]/",
    # multicast, broadcast, reserved
    "http://224.0.0.1/",
    "http://255.255.255.255/",
    "http://240.0.0.1/",
    # DNS names answering what they should not
    "http://internal.example/",  # 10.1.2.3
    "http://loop.example:8080/",  # 127.0.0.1
    "http://v6-metadata.example/",  # fd00:ec2::254
    "http://split.example/",  # public and 192.168.0.10 at once
    # a private host dressed as a public one
    "http://news.example@10.0.0.1/",
    "http://10.0.0.1#@news.example/",
]

pytestmark = pytest.mark.usefixtures("network")


@pytest.mark.parametrize("url", CORPUS)
def test_every_address_of_the_corpus_is_refused(url):
    with pytest.raises(Refused) as refused:
        check_url(url)
    assert refused.value.kind in {"private", "metadata"}, refused.value.sentence
    assert refused.value.sentence.endswith(("never dials", "lists it in OUTBOUND_ALLOW"))


def test_the_corpus_is_about_forty_varied_forms():
    assert len(CORPUS) >= 40 and len(set(CORPUS)) == len(CORPUS)


def test_the_corpus_connected_to_nothing(network, site):
    for url in CORPUS:
        with pytest.raises(Refused):
            check_url(url)
    assert network.connected == [] and network.refused == [] and site.requests == []


def test_metadata_is_named_as_such_and_never_allowed(closed):
    closed.OUTBOUND_ALLOW = ["169.254.0.0/16", "metadata.google.internal", "[fd00:ec2::/64]"]
    for url in (
        "http://169.254.169.254/",
        "http://metadata.google.internal/",
        "http://[fd00:ec2::254]/",
        "http://2852039166/",
    ):
        with pytest.raises(Refused) as refused:
            check_url(url)
        assert refused.value.kind == "metadata"
        assert "cloud metadata" in refused.value.sentence


def test_a_name_that_resolves_to_a_private_address_does_not_tell_the_address():
    # Whoever typed the name learns the rule, not the inside of the network's DNS.
    with pytest.raises(Refused) as refused:
        check_url("http://internal.example/")
    assert "10.1.2.3" not in refused.value.sentence
    assert refused.value.address == "10.1.2.3"  # for the operator's log and the model's retry


def test_a_public_name_passes_and_says_where_it_goes():
    checked = check_url("https://news.example/v1")
    assert checked.addresses == (PUBLIC_IP,) and checked.target.port == 443


@pytest.mark.parametrize(
    "url, kind",
    [
        ("http://[x]/", "malformed"),
        ("https://[x]/", "malformed"),
        ("http://[::1/", "malformed"),
        ("http://example.com:99999/", "malformed"),
        ("http://exa mple.com/", "malformed"),
        ("http:///nohost", "malformed"),
        ("", "scheme"),
        (None, "scheme"),
        (42, "scheme"),
        ("ftp://news.example/", "scheme"),
        ("file:///etc/passwd", "scheme"),
        ("gopher://10.0.0.1:70/", "scheme"),
        ("//10.0.0.1/", "scheme"),
        ("http://nowhere.example/", "unresolvable"),
        ("https://user:pw@news.example/", "credentials"),
    ],
)
def test_a_url_that_cannot_be_dialled_is_a_refusal_never_an_exception(url, kind):
    with pytest.raises(Refused) as refused:
        check_url(url)
    assert refused.value.kind == kind
    assert refused.value.sentence


def test_field_error_is_the_sentence_or_none():
    assert field_error("https://news.example/") is None
    assert "not a valid" in field_error("https://[x]/")


# --- the allow-list ---------------------------------------------------------------------------


def test_a_listed_name_is_dialled_on_its_port_only(closed):
    closed.OUTBOUND_ALLOW = ["gpu.internal:8000"]
    assert check_url("http://gpu.internal:8000/v1").addresses == ("10.0.0.9",)
    for url in ("http://gpu.internal:8001/v1", "http://gpu.internal/v1", "http://10.0.0.9:8000/"):
        with pytest.raises(Refused):
            check_url(url)


def test_a_listed_address_or_network_admits_what_resolves_into_it(closed):
    closed.OUTBOUND_ALLOW = ["10.0.0.0/24", "[fc00::1]"]
    assert check_url("http://gpu.internal:1234/").addresses == ("10.0.0.9",)
    assert check_url("http://10.0.0.200/").addresses == ("10.0.0.200",)
    assert check_url("http://[fc00::1]:9/").addresses == ("fc00::1",)
    with pytest.raises(Refused):
        check_url("http://10.0.1.1/")
    with pytest.raises(Refused):
        check_url("http://127.0.0.1/")


def test_the_model_never_gets_the_allow_list(closed):
    closed.OUTBOUND_ALLOW = ["gpu.internal"]
    assert check_url("http://gpu.internal/")
    with pytest.raises(Refused):
        check_url("http://gpu.internal/", allow=NOBODY)


def test_https_unless_listed_keeps_a_key_off_plain_http(closed):
    with pytest.raises(Refused) as refused:
        check_url("http://news.example/", https_unless_listed=True)
    assert refused.value.kind == "plain_http"
    assert check_url("https://news.example/", https_unless_listed=True)
    closed.OUTBOUND_ALLOW = ["gpu.internal"]
    assert check_url("http://gpu.internal/", https_unless_listed=True)


@pytest.mark.parametrize(
    "entry, expected",
    [
        ("gpu.internal", allowlist.Entry(name="gpu.internal")),
        ("GPU.Internal.:8000", allowlist.Entry(name="gpu.internal", port=8000)),
        ("10.0.0.5", allowlist.Entry(network=ip_network("10.0.0.5/32"))),
        (
            "10.0.8.0/24:443",
            allowlist.Entry(network=ip_network("10.0.8.0/24"), port=443),
        ),
        ("[fd00::5]", allowlist.Entry(network=ip_network("fd00::5/128"))),
        (
            "[fd00:1::/64]:8080",
            allowlist.Entry(network=ip_network("fd00:1::/64"), port=8080),
        ),
    ],
)
def test_an_allow_list_entry_reads_as_documented(entry, expected):
    assert allowlist.parse_entry(entry) == expected


@pytest.mark.parametrize(
    "entry",
    [
        "*.internal",
        "gpu.internal:99999",
        "gpu.internal:port",
        "fd00::5",
        "[fd00::5",
        "[10.0.0.5]",
        "0.0.0.0/0",
        "[::/0]",
        "http://gpu.internal/",
        "gpu internal",
        "",
    ],
)
def test_a_malformed_entry_is_named_and_allows_nothing(entry, closed):
    with pytest.raises(allowlist.MalformedEntry):
        allowlist.parse_entry(entry)
    closed.OUTBOUND_ALLOW = [entry, "news.example"]
    assert [e.name for e in allowlist.parse(tuple(closed.OUTBOUND_ALLOW))] == ["news.example"]


def test_the_system_check_names_a_malformed_entry(closed):
    closed.OUTBOUND_ALLOW = ["gpu.internal:8000", "*.internal"]
    found = [p for p in check_configuration(None) if p.id == "agenticos.E010"]
    assert len(found) == 1 and isinstance(found[0], Error)
    assert "*.internal" in found[0].msg and "HOST:PORT" in found[0].hint
    closed.OUTBOUND_ALLOW = ["gpu.internal:8000"]
    assert not [p for p in check_configuration(None) if p.id == "agenticos.E010"]


def test_the_system_check_says_a_retired_list_is_no_longer_read(closed):
    closed.RETIRED_OUTBOUND_SETTINGS = ("MCP_ALLOWED_HOSTS",)
    (found,) = [p for p in check_configuration(None) if p.id == "agenticos.W010"]
    assert isinstance(found, Warning) and "OUTBOUND_ALLOW" in found.hint


def test_the_reader_trims_and_lowers_the_environments_list(monkeypatch):
    from agenticos.settings.env import env_destinations

    monkeypatch.setenv("OUTBOUND_ALLOW", " GPU.internal:8000 , 10.0.0.5,,[fd00::5] ")
    assert env_destinations("OUTBOUND_ALLOW") == ("gpu.internal:8000", "10.0.0.5", "[fd00::5]")
    monkeypatch.setenv("OUTBOUND_ALLOW", "")
    assert env_destinations("OUTBOUND_ALLOW") == ()
