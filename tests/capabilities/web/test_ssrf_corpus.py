"""The SSRF corpus: every address an agent must never reach, through the real tool and the real runner.

Each entry is fetched with ``/call web_fetch`` on the offline model (several per run, as parallel
calls). The goal is 100% refused, each refusal reaching the model as a retry that names why — and,
whatever the guard decided, no packet outside 127.0.0.1: the ``network`` fixture refuses and records
any other destination, so a broken guard is a failing test, not traffic. Names resolve only through
the test's resolver (``metadata.google.internal`` answers 169.254.169.254 as it does on GCP).
"""

from __future__ import annotations

import pytest

from .conftest import NEWS_IP, url
from .fakes import Page
from .runs import agent_with, run_now, slash_call, stored_returns

pytestmark = pytest.mark.django_db

PRIVATE = [
    "http://10.0.0.1/",
    "http://10.255.255.254/admin",
    "http://172.16.0.1/",
    "http://172.31.255.254/",
    "http://192.168.0.1/",
    "http://192.168.255.254/router",
    "http://100.64.0.1/",
    "http://100.127.255.254/",
    "http://[fc00::1]/",
    "http://[fd12:3456:789a::1]/",
]
LOOPBACK = [
    "http://127.0.0.1/",
    "http://127.1.2.3:8080/",
    "http://[::1]/",
    "http://0.0.0.0/",
    "http://localhost/",
    "http://LOCALHOST./",
    "http://[::]/",
    "http://[0:0:0:0:0:0:0:1]/",
    "http://loopback-alias.example/",  # a public-looking name that answers 127.0.0.1
]
LINK_LOCAL = [
    "http://169.254.1.1/",
    "http://[fe80::1]/",
    "http://[fe80::1%25eth0]/",
]
METADATA = [
    "http://169.254.169.254/latest/meta-data/iam/security-credentials/",
    "http://169.254.169.254./latest/meta-data/",
    "http://[fd00:ec2::254]/latest/meta-data/",
    "http://metadata.google.internal/computeMetadata/v1/",
    "http://metadata.google.internal./computeMetadata/v1/",
    "http://169.254.170.2/v2/credentials",
    "http://100.100.100.200/latest/meta-data/",
    "http://metadata-alias.example/latest/",  # a name that answers AWS's IPv6 metadata address
]
IPV4_MAPPED = [
    "http://[::ffff:127.0.0.1]/",
    "http://[::ffff:7f00:1]/",
    "http://[::ffff:10.0.0.1]/",
    "http://[::ffff:169.254.169.254]/",
    "http://[::ffff:a9fe:a9fe]/",
    "http://[64:ff9b::a9fe:a9fe]/",
    "http://[2002:a9fe:a9fe::]/",
]
BARE_NUMBERS = [
    "http://2130706433/",  # 127.0.0.1 in decimal
    "http://0177.0.0.1/",  # octal
    "http://0x7f.0.0.1/",  # hex octet
    "http://0x7f000001/",  # hex whole
    "http://127.1/",  # short form
    "http://0/",  # 0.0.0.0
    "http://2852039166/",  # 169.254.169.254 in decimal
    "http://0251.0376.0251.0376/",  # 169.254.169.254 in octal
    "http://0xa9fea9fe/",  # 169.254.169.254 in hex
    "http://10.1/",  # 10.0.0.1 short
    "http://167772161/",  # 10.0.0.1 in decimal
    "http://0300.0250.0.1/",  # 192.168.0.1 in octal
]
# URLs that dress a private host as something else: user info, a fragment, an explicit port.
DISGUISED = [
    "http://news.example@10.0.0.1/",
    "http://10.0.0.1#@news.example/",
    "http://user:pass@169.254.169.254/",
    "http://192.168.0.1:443/",
    "https://10.0.0.1/",
]
CORPUS = PRIVATE + LOOPBACK + LINK_LOCAL + METADATA + IPV4_MAPPED + BARE_NUMBERS + DISGUISED


def _fetch_all(member, org, urls, **config):
    agent = agent_with(org, {"id": "web_fetch", "config": config})
    message = "\n".join(slash_call("web_fetch", url=u) for u in urls)
    run = run_now(member, org, agent, message)
    assert run.status == "completed", run.error
    return run, stored_returns(run)


def _assert_all_refused_as_retries(returns, urls):
    # The offline model numbers parallel calls in the order of the /call lines.
    ordered = sorted(returns, key=lambda part: int(part.tool_call_id.rsplit("-", 1)[1]))
    assert len(ordered) == len(urls)
    for link, part in zip(urls, ordered, strict=True):
        text = part.content
        assert part.outcome == "retried", (link, text)
        assert text.startswith(f"Refused to read {link}:"), (link, text)
        assert "never reads" in text, (link, text)
        # The library's own hint (a switch to allow local addresses) is not ours to offer.
        assert "allow-local" not in text and "force_download" not in text, (link, text)


@pytest.fixture
def corpus_network(network):
    network.answer("metadata.google.internal", "169.254.169.254")
    network.answer("loopback-alias.example", "127.0.0.1")
    network.answer("metadata-alias.example", "fd00:ec2::254")
    return network


@pytest.mark.parametrize(
    "group",
    [PRIVATE, LOOPBACK, LINK_LOCAL, METADATA, IPV4_MAPPED, BARE_NUMBERS, DISGUISED],
    ids=[
        "private",
        "loopback",
        "link_local",
        "metadata",
        "ipv4_mapped",
        "bare_numbers",
        "disguised",
    ],
)
def test_every_address_of_the_corpus_is_refused_as_a_retry(
    corpus_network, site, org, member, group
):
    run, returns = _fetch_all(member, org, group)
    _assert_all_refused_as_retries(returns, group)
    # Refused before any connection: nothing reached the fake, nothing tried to leave loopback.
    assert site.requests == [] and corpus_network.connected == [] and corpus_network.refused == []


def test_metadata_refusals_say_metadata(corpus_network, site, org, member):
    _, returns = _fetch_all(member, org, METADATA[:4])
    for part in returns:
        assert "cloud metadata address" in part.model_response_str()


def test_a_public_page_that_redirects_into_the_corpus_is_refused_at_the_hop(
    corpus_network, site, org, member
):
    targets = {f"/to/{n}": link for n, link in enumerate(CORPUS)}
    for path, link in targets.items():
        site.route("news.example", path, Page.redirect(link))
    starts = [url(site, "news.example", path) for path in targets]
    run, returns = _fetch_all(member, org, starts)
    _assert_all_refused_as_retries(returns, starts)
    # Each start was fetched from the public fake once; no hop went anywhere else.
    assert sorted(r.path for r in site.requests) == sorted(targets)
    assert set(corpus_network.connected) == {(NEWS_IP, site.port)}
    assert corpus_network.refused == []


def test_dns_rebinding_cannot_move_a_pinned_request(corpus_network, site, org, member):
    """Public for the outbound check and the first hop, private after: the request goes to the
    address that was checked, and the redirect's own lookup, now private, is refused."""
    corpus_network.answer("rebind.example", NEWS_IP, NEWS_IP, "10.0.0.7")
    site.route("rebind.example", "/start", Page.redirect("/inside"))
    site.route("rebind.example", "/inside", Page("<p>you should not see this</p>"))
    link = url(site, "rebind.example", "/start")
    run, returns = _fetch_all(member, org, [link])
    (part,) = returns
    assert part.outcome == "retried"
    assert "(10.0.0.7)" in part.model_response_str()
    assert [r.path for r in site.requests] == ["/start"]
    # The outbound check's lookup, then one per hop made by the download's guard: the HTTP client
    # never resolved the name on its own.
    assert corpus_network.lookups == ["rebind.example"] * 3
    assert corpus_network.connected == [(NEWS_IP, site.port)]

    # A later call: the name now answers private to the outbound check, refused before connecting.
    _, (again,) = _fetch_all(member, org, [link])
    assert again.outcome == "retried" and "(10.0.0.7)" in again.model_response_str()
    assert [r.path for r in site.requests] == ["/start"]


def test_a_name_answering_public_and_private_at_once_is_refused(corpus_network, site, org, member):
    corpus_network.answer("split.example", [NEWS_IP, "192.168.1.10"])
    _, (part,) = _fetch_all(member, org, [url(site, "split.example", "/")])
    assert part.outcome == "retried" and "(192.168.1.10)" in part.model_response_str()
    assert site.requests == []


@pytest.mark.parametrize(
    "spelling",
    [
        "DOCS.EXAMPLE",
        "docs.example.",
        "Docs.Example.",
        "docs\u3002example",
        "\uff44\uff4f\uff43\uff53.example",
    ],
)
def test_a_blocked_host_is_refused_in_every_spelling_dns_would_accept(
    corpus_network, site, org, member, spelling
):
    site.route("*", "/", Page("<p>docs</p>"))
    link = f"http://{spelling}:{site.port}/"
    _, (part,) = _fetch_all(member, org, [link], blocked_domains=["docs.example"])
    assert part.outcome == "retried"
    assert "blocked list" in part.model_response_str(), part.model_response_str()
    assert site.requests == []


@pytest.mark.parametrize(
    "link",
    [
        "file:///etc/passwd",
        "gopher://10.0.0.1:70/",
        "ftp://news.example/",
        "//10.0.0.1/",
        "10.0.0.1",
    ],
)
def test_a_url_that_is_not_http_is_a_retry_saying_what_to_pass(
    corpus_network, site, org, member, link
):
    _, (part,) = _fetch_all(member, org, [link])
    assert part.outcome == "retried"
    assert "is not an absolute http(s) URL" in part.content
    assert site.requests == [] and corpus_network.lookups == []


def test_the_guard_itself_refuses_what_the_tool_would_not(corpus_network):
    """The net under the corpus: a connection to anything but 127.0.0.1 never leaves the process."""
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        with pytest.raises(ConnectionRefusedError):
            sock.connect(("10.0.0.1", 80))
    with pytest.raises(socket.gaierror):
        socket.getaddrinfo("example.com", 80)
    assert corpus_network.refused == [("10.0.0.1", 80)]
    assert corpus_network.lookups == ["example.com"]
    corpus_network.expected_refusals = [("10.0.0.1", 80)]
