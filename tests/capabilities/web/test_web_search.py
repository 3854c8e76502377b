"""web_search through the real runner on the offline model, each method against a fake of its API on
127.0.0.1. The fakes are reached by replacing the method's entry in ``web_search.ENDPOINTS`` — a
module constant that no spec, binding or setting can change."""

from __future__ import annotations

import json
from urllib.parse import parse_qs, urlsplit

import pytest

from apps.capabilities.tools import web_search
from apps.capabilities.tools.sources import sources_of
from apps.vault.services import secret_create

from .fakes import Page
from .runs import agent_with, only_return, run_now, slash_call

pytestmark = pytest.mark.django_db

KEY = "key-for-tests-0123456789"

DUCKDUCKGO_HTML = """<html><body>
<div class="result results_links results_links_deep web-result">
  <div class="links_main links_deep result__body">
    <h2 class="result__title"><a class="result__a" href="https://www.ecb.europa.eu/rates">Euro exchange rates - ECB</a></h2>
    <a class="result__snippet" href="https://www.ecb.europa.eu/rates">Reference rates of the euro, published daily.</a>
  </div>
</div>
<div class="result results_links results_links_deep web-result">
  <div class="links_main links_deep result__body">
    <h2 class="result__title"><a class="result__a" href="//duckduckgo.com/l/?uddg=https%3A%2F%2Fexample.org%2Feuro-dollar&amp;rut=abc">Euro dollar rate today</a></h2>
    <a class="result__snippet" href="//duckduckgo.com/l/?uddg=https%3A%2F%2Fexample.org%2Feuro-dollar&amp;rut=abc">The euro against the dollar, live.</a>
  </div>
</div>
</body></html>"""


@pytest.fixture
def api(network, site, monkeypatch):
    """Every search method's service answered by the fake on 127.0.0.1.

    ddgs talks through a Rust HTTP client whose sockets the network guard cannot see, so it is also
    sent through the fake as its proxy (``DDGS_PROXY``): had the endpoint not been replaced, the
    request would reach the fake as a tunnel to the real host, refused and recorded."""
    for method, path in (
        ("duckduckgo", "/html/"),
        ("tavily", ""),
        ("brave", "/res/v1/web/search"),
        ("exa", ""),
    ):
        monkeypatch.setitem(web_search.ENDPOINTS, method, f"{site.base}{path}")
    monkeypatch.setenv("DDGS_PROXY", site.base)
    yield site
    assert {r.host for r in site.requests} <= {"127.0.0.1"}, [
        (r.method, r.host) for r in site.requests
    ]


def search(member, org, query, **binding):
    agent = agent_with(org, {"id": "web_research", **binding})
    return run_now(member, org, agent, slash_call("web_search", query=query))


@pytest.fixture
def key(org):
    return secret_create(
        actor=None, organization=org, name="search key", purpose="capability", value=KEY
    )


def test_duckduckgo_is_the_default_and_answers_with_clickable_sources(api, org, member):
    api.route("127.0.0.1", "/html/", Page(DUCKDUCKGO_HTML))
    run = search(member, org, "euro dollar rate")
    assert run.status == "completed"
    part = only_return(run)
    assert part.outcome == "success"
    text = part.model_response_str()
    assert "2 results for 'euro dollar rate' from DuckDuckGo" in text
    assert "[Euro exchange rates - ECB](https://www.ecb.europa.eu/rates)" in text
    assert "Reference rates of the euro, published daily." in text
    # A result linked through DuckDuckGo's redirector is the page it points to.
    assert "[Euro dollar rate today](https://example.org/euro-dollar)" in text
    assert "call web_fetch on a URL to read it" in text
    assert {s["host"] for s in sources_of(part.metadata)} == {"ecb.europa.eu", "example.org"}
    (request,) = api.requests
    assert request.method == "POST" and parse_qs(request.body.decode())["q"] == ["euro dollar rate"]


def test_no_results_is_said_as_text_not_as_a_retry(api, org, member):
    api.route("127.0.0.1", "/html/", Page("<html><body><p>No results.</p></body></html>"))
    part = only_return(search(member, org, "zzqx unfindable"))
    assert part.outcome == "success"
    assert "No results for 'zzqx unfindable' on DuckDuckGo" in part.model_response_str()


def test_tavily_takes_the_vault_key_and_max_results(api, org, member, key):
    def answer(seen):
        body = json.loads(seen.body)
        assert seen.headers["Authorization"] == f"Bearer {KEY}"
        assert body["query"] == "ecb rate decision" and body["max_results"] == 2
        return Page.json(
            {
                "query": body["query"],
                "results": [
                    {
                        "title": "ECB decision",
                        "url": "https://news.example/ecb",
                        "content": "Rates held.",
                        "score": 0.9,
                    },
                    {
                        "title": "Analysis",
                        "url": "https://docs.example/a",
                        "content": "Why.",
                        "score": 0.5,
                    },
                ],
                "response_time": 0.1,
            }
        )

    api.route("127.0.0.1", "/search", answer)
    run = search(
        member,
        org,
        "ecb rate decision",
        config={"method": "tavily", "max_results": 2},
        secret_id=key.pk,
    )
    part = only_return(run)
    assert part.outcome == "success", part.content
    text = part.model_response_str()
    assert "2 results for 'ecb rate decision' from Tavily" in text
    assert "[ECB decision](https://news.example/ecb)" in text and "Rates held." in text


def test_brave_takes_the_vault_key(api, org, member, key):
    def answer(seen):
        assert seen.headers["X-Subscription-Token"] == KEY
        query = parse_qs(urlsplit(seen.path).query)
        assert query == {"q": ["brave query"], "count": ["3"]}
        return Page.json(
            {
                "web": {
                    "results": [
                        {
                            "title": "One",
                            "url": "https://news.example/1",
                            "description": "First <strong>hit</strong>.",
                        },
                        {"title": "Two", "url": "https://news.example/2", "description": "Second."},
                    ]
                }
            }
        )

    api.route("127.0.0.1", "/res/v1/web/search", answer)
    run = search(
        member, org, "brave query", config={"method": "brave", "max_results": 3}, secret_id=key.pk
    )
    text = only_return(run).model_response_str()
    assert "2 results for 'brave query' from Brave Search" in text
    assert "[One](https://news.example/1)" in text


def test_exa_takes_the_vault_key(api, org, member, key):
    def answer(seen):
        body = json.loads(seen.body)
        assert seen.headers.get("x-api-key") == KEY or seen.headers.get("X-Api-Key") == KEY
        assert body["query"] == "meaning search" and body["numResults"] == 4
        return Page.json(
            {
                "requestId": "r1",
                "results": [
                    {
                        "id": "https://docs.example/paper",
                        "url": "https://docs.example/paper",
                        "title": "A paper",
                        "text": "About meaning.",
                        "publishedDate": None,
                        "author": None,
                    }
                ],
            }
        )

    api.route("127.0.0.1", "/search", answer)
    run = search(
        member, org, "meaning search", config={"method": "exa", "max_results": 4}, secret_id=key.pk
    )
    part = only_return(run)
    assert part.outcome == "success", part.content
    assert "[A paper](https://docs.example/paper)" in part.model_response_str()


@pytest.mark.parametrize(
    ("method", "path", "status"),
    [("tavily", "/search", 401), ("brave", "/res/v1/web/search", 403), ("exa", "/search", 401)],
)
def test_a_refused_key_is_said_as_text(api, org, member, key, method, path, status):
    from apps.capabilities.tools.sources import web_activity

    api.route("127.0.0.1", path, Page.json({"detail": {"error": "bad key"}}, status=status))
    run = search(member, org, "anything", config={"method": method}, secret_id=key.pk)
    part = only_return(run)
    assert part.outcome == "success"
    assert "refused the agent's API key" in part.model_response_str()
    assert "must check the key" in part.model_response_str()
    assert [(r["tool"], r["target"], r["outcome"]) for r in web_activity(run.transcript)] == [
        ("web_search", "anything", "refused")
    ]


@pytest.mark.parametrize(
    ("method", "path"), [("tavily", "/search"), ("brave", "/res/v1/web/search"), ("exa", "/search")]
)
def test_a_service_that_is_down_is_a_retry(api, org, member, key, method, path):
    api.route("127.0.0.1", path, Page("upstream down", status=503, content_type="text/plain"))
    part = only_return(search(member, org, "anything", config={"method": method}, secret_id=key.pk))
    assert part.outcome == "retried", part.content
    assert "Try the search again" in part.content


def test_an_unreachable_service_is_a_retry(network, org, member, key, monkeypatch):
    # Nothing listens there: the connection is refused on loopback.
    monkeypatch.setitem(web_search.ENDPOINTS, "brave", "http://127.0.0.1:9/res/v1/web/search")
    part = only_return(
        search(member, org, "anything", config={"method": "brave"}, secret_id=key.pk)
    )
    assert part.outcome == "retried"
    assert "Brave Search could not be reached" in part.content


def test_no_spec_can_point_a_search_or_a_fetch_at_another_host():
    """The endpoints are code (web_search.ENDPOINTS): a config naming one is refused like any
    unknown setting, so it is a publish error, never a request."""
    from pydantic import ValidationError

    from apps.capabilities.registry import get_capability

    for capability, key in (
        ("web_research", "base_url"),
        ("web_research", "endpoint"),
        ("web_fetch", "proxy"),
    ):
        with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
            get_capability(capability).parse_config({key: "http://127.0.0.1:1/"})
