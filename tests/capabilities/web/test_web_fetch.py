"""web_fetch through the real runner on the offline model, against sites faked on 127.0.0.1."""

from __future__ import annotations

import pytest

from apps.capabilities.tools.sources import sources_of

from .conftest import url
from .fakes import Page
from .runs import agent_with, only_return, run_now, slash_call

pytestmark = pytest.mark.django_db

ARTICLE = """<!doctype html><html><head><title>Rates rise again</title></head>
<body><h1>Rates rise again</h1><p>The central bank raised rates by <b>0.25</b> points.</p>
<ul><li>first</li><li>second</li></ul></body></html>"""


def fetch(member, org, link, **config):
    agent = agent_with(org, {"id": "web_fetch", "config": config})
    return run_now(member, org, agent, slash_call("web_fetch", url=link))


def test_a_page_comes_back_as_markdown_with_its_source(network, site, org, member):
    site.route("news.example", "/rates", Page(ARTICLE))
    run = fetch(member, org, url(site, "news.example", "/rates"))
    assert run.status == "completed"
    part = only_return(run)
    assert part.outcome == "success"
    text = part.model_response_str()
    assert text.startswith("# Rates rise again")
    assert "raised rates by **0.25** points" in text
    assert "* first\n* second" in text
    assert sources_of(part.metadata) == [
        {
            "url": url(site, "news.example", "/rates"),
            "title": "Rates rise again",
            "host": "news.example",
        }
    ]
    # The request went to the address the name resolved to, pinned; the Host header kept the name.
    assert network.connected == [("93.184.215.14", site.port)]
    assert site.requests[0].host == "news.example"


def test_text_is_cut_at_max_content_chars_with_a_note(network, site, org, member):
    site.route("news.example", "/long", Page("word " * 5000, content_type="text/plain"))
    run = fetch(member, org, url(site, "news.example", "/long"), max_content_chars=1000)
    text = only_return(run).model_response_str()
    body = text.split("\n\n", 1)[1]
    assert body.startswith("word word")
    assert "[Cut at 1,000 characters of 24,999.]" in text
    assert len(body) < 1100


def test_json_and_markdown_come_back_as_markdown(network, site, org, member):
    site.route("news.example", "/data.json", Page('{"rate": 4.5}', content_type="application/json"))
    site.route("news.example", "/notes.md", Page("# Notes\n\n- one", content_type="text/markdown"))
    data = only_return(
        fetch(member, org, url(site, "news.example", "/data.json"))
    ).model_response_str()
    assert '```json\n{\n  "rate": 4.5\n}\n```' in data
    notes = only_return(
        fetch(member, org, url(site, "news.example", "/notes.md"))
    ).model_response_str()
    assert "# Notes\n\n- one" in notes


def test_a_loopback_address_is_a_retry_naming_it_and_the_run_carries_on(network, site, org, member):
    run = fetch(member, org, f"http://127.0.0.1:{site.port}/")
    assert run.status == "completed"
    part = only_return(run)
    assert part.outcome == "retried"
    assert "private, loopback or link-local address (127.0.0.1)" in part.model_response_str()
    assert "The tool call did not work" in run.output
    assert site.requests == []


def test_a_403_is_a_retry_saying_so(network, site, org, member):
    site.route("news.example", "/secret", Page("no", status=403, content_type="text/plain"))
    part = only_return(fetch(member, org, url(site, "news.example", "/secret")))
    assert part.outcome == "retried"
    assert "the site answered HTTP 403 Forbidden" in part.model_response_str()


def test_a_binary_without_text_is_a_retry_naming_what_arrived(network, site, org, member):
    site.route(
        "news.example", "/a.zip", Page(b"\x00\x01binary" * 10, content_type="application/zip")
    )
    part = only_return(fetch(member, org, url(site, "news.example", "/a.zip")))
    assert part.outcome == "retried"
    assert (
        "it is application/zip, 80 bytes of binary data with no readable text"
        in part.model_response_str()
    )


def test_a_host_outside_the_allow_list_is_refused_in_any_spelling(network, site, org, member):
    site.route("*", "/", Page("<p>hi</p>"))
    run = fetch(member, org, url(site, "NEWS.example.", "/"), allowed_domains=["docs.example"])
    part = only_return(run)
    assert part.outcome == "retried"
    assert "this agent may only read pages on docs.example" in part.model_response_str()
    assert site.requests == []
    ok = only_return(
        fetch(member, org, url(site, "Docs.Example.", "/"), allowed_domains=["docs.example"])
    )
    assert ok.outcome == "success"
    assert [r.host for r in site.requests] == ["docs.example"]


def test_a_blocked_host_is_refused_in_every_spelling(network, site, org, member):
    network.answer("xn--exmple-cua.example", "93.184.215.14")
    site.route("*", "/", Page("<p>hi</p>"))
    for spelling in ("exämple.example", "EXÄMPLE.example.", "xn--exmple-cua.example"):
        part = only_return(
            fetch(member, org, url(site, spelling, "/"), blocked_domains=["exämple.example"])
        )
        assert part.outcome == "retried", spelling
        assert "blocked list" in part.model_response_str()
    assert site.requests == []


def test_a_redirect_to_a_blocked_host_is_refused_at_the_hop(network, site, org, member):
    site.route("news.example", "/go", Page.redirect(url(site, "docs.example", "/there")))
    site.route("docs.example", "/there", Page("<p>there</p>"))
    part = only_return(
        fetch(member, org, url(site, "news.example", "/go"), blocked_domains=["docs.example"])
    )
    assert part.outcome == "retried"
    assert "blocked list" in part.model_response_str()
    assert [r.host for r in site.requests] == ["news.example"]


def test_the_source_card_data_is_in_the_live_frame_and_in_the_stored_transcript(
    network, site, org, member
):
    from apps.runs.events import frames_after
    from apps.runs.transcript import chat_turns

    site.route("news.example", "/rates", Page(ARTICLE))
    link = url(site, "news.example", "/rates")
    run = fetch(member, org, link)
    card = {"url": link, "title": "Rates rise again", "host": "news.example"}
    (frame,) = [f for f in frames_after(run.pk) if f["type"] == "tool_result"]
    assert frame["sources"] == [card]
    # After a reload the chat's turn carries the same card, read from the stored transcript.
    (turn,) = [t for t in chat_turns(run.conversation) if t["role"] == "assistant"]
    blocks = [b for b in turn["blocks"] if b["kind"] == "sources"]
    assert blocks == [{"kind": "sources", "tool_call_id": frame["tool_call_id"], "sources": [card]}]


def test_each_web_call_of_a_run_is_listed_with_its_url_and_outcome(network, site, org, member):
    from apps.capabilities.tools.sources import web_activity

    site.route("news.example", "/ok", Page("<title>Ok</title><p>ok</p>"))
    agent = agent_with(org, {"id": "web_fetch"})
    ok, refused = url(site, "news.example", "/ok"), "http://10.0.0.1/"
    run = run_now(
        member,
        org,
        agent,
        slash_call("web_fetch", url=ok) + "\n" + slash_call("web_fetch", url=refused),
    )
    rows = web_activity(run.transcript)
    assert [(r["tool"], r["target"], r["outcome"]) for r in rows] == [
        ("web_fetch", ok, "read"),
        ("web_fetch", refused, "retried"),
    ]
    assert rows[1]["detail"].startswith("Refused to read http://10.0.0.1/")


def test_activity_run_detail_shows_each_fetch_with_its_url_and_outcome(network, site, org, owner):
    from django.test import Client

    site.route("news.example", "/ok", Page("<title>Ok</title><p>ok</p>"))
    agent = agent_with(org, {"id": "web_fetch"})
    first = run_now(owner, org, agent, slash_call("web_fetch", url="http://192.168.0.1/"))
    ok = url(site, "news.example", "/ok")
    second = run_now(
        owner, org, agent, slash_call("web_fetch", url=ok), conversation=first.conversation
    )
    client = Client()
    client.force_login(owner)
    page = client.get(f"/activity/?run={second.pk}").content.decode()
    web = page.split('<ul class="web-calls">', 1)[1].split("</ul>", 1)[0]
    assert f"web_fetch <code>{ok}</code> · read" in web
    # The earlier turn's refused fetch belongs to the first run's detail, not this one.
    assert "192.168.0.1" not in web
    first_page = client.get(f"/activity/?run={first.pk}").content.decode()
    assert "web_fetch <code>http://192.168.0.1/</code> · retried — Refused to read" in first_page


def test_a_body_past_the_download_limit_is_refused_while_it_streams(
    network, site, org, member, monkeypatch
):
    from apps.capabilities.tools import web_fetch

    monkeypatch.setattr(web_fetch, "MAX_DOWNLOAD_BYTES", 10_000)
    site.route("news.example", "/big", Page("x" * 50_000, content_type="text/plain"))
    part = only_return(fetch(member, org, url(site, "news.example", "/big")))
    assert part.outcome == "retried"
    assert "larger than the 10,000 bytes this deployment downloads" in part.content


def test_a_compression_that_cannot_be_bounded_is_refused(network, site, org, member):
    site.route(
        "news.example",
        "/br",
        Page(b"\x1b\x00\x00", content_type="text/html", headers={"Content-Encoding": "br"}),
    )
    part = only_return(fetch(member, org, url(site, "news.example", "/br")))
    assert part.outcome == "retried"
    assert "compresses it in a way that cannot be read safely" in part.content
    # It was never invited: the request only accepted what can be bounded.
    assert site.requests[0].headers["Accept-Encoding"] == "identity, gzip"


def test_a_site_that_does_not_answer_in_time_is_a_retry(network, site, org, member, monkeypatch):
    import time

    from apps.capabilities.tools import web_fetch

    monkeypatch.setattr(web_fetch, "FETCH_TIMEOUT_SECONDS", 1)

    def slow(seen):
        time.sleep(1.6)
        return Page("<p>late</p>")

    site.route("news.example", "/slow", slow)
    part = only_return(fetch(member, org, url(site, "news.example", "/slow")))
    assert part.outcome == "retried"
    assert "did not answer in time" in part.content, part.content


def test_a_renamed_fetch_keeps_its_id_and_is_listed_under_it(network, site, org, owner):
    from django.test import Client

    site.route("news.example", "/ok", Page("<title>Ok</title><p>ok</p>"))
    agent = agent_with(
        org, {"id": "web_fetch", "tool_overrides": {"web_fetch": {"name": "read_page"}}}
    )
    link = url(site, "news.example", "/ok")
    run = run_now(owner, org, agent, slash_call("read_page", url=link))
    part = only_return(run)
    assert part.tool_name == "read_page" and part.outcome == "success"
    client = Client()
    client.force_login(owner)
    page = client.get(f"/activity/?run={run.pk}").content.decode()
    assert f"web_fetch <code>{link}</code> · read" in page
