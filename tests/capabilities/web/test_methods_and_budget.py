"""Which method a run gets, the retry budget on the last attempt, and the rules again at assembly."""

from __future__ import annotations

import pytest

from apps.agents.models import AgentVersion
from apps.capabilities.registry import get_capability
from apps.capabilities.tools.web_fetch import local_web_fetch
from apps.capabilities.tools.web_search import web_search_function
from tests.capabilities.tools.helpers import call, run_agent, tool_returns
from tests.runs.factories import compatible_profile, published_agent
from tests.runs.fake_openai import FakeOpenAI

from .conftest import url
from .fakes import Page
from .runs import agent_with, only_return, run_now, slash_call, stored_returns

pytestmark = pytest.mark.django_db


# --- the last attempt ----------------------------------------------------------------------------


def _toolset_of(function, name):
    from pydantic_ai.toolsets import FunctionToolset

    toolset = FunctionToolset()
    toolset.add_function(function, name=name)
    return toolset


def test_on_the_last_attempt_a_refusal_is_the_result_and_the_run_goes_on(network, site):
    """pydantic-ai counts retries per tool, not per URL: the second refused site would end the run
    if it were raised. It comes back as the result instead, and the model answers."""
    site.route("news.example", "/ok", Page("<title>Fine</title><p>fine</p>"))
    fetch = local_web_fetch(get_capability("web_fetch").parse_config({}))
    result, script = run_agent(
        [_toolset_of(fetch, "web_fetch")],
        [
            call("web_fetch", url="http://10.0.0.1/"),
            call("web_fetch", url="http://169.254.169.254/latest/"),
            call("web_fetch", url=url(site, "news.example", "/ok")),
            "answered",
        ],
    )
    assert result.output == "answered"
    first, second, third = tool_returns(result.all_messages())
    assert first.outcome == "retried" and "(10.0.0.1)" in first.content
    assert (
        second.outcome == "success" and "cloud metadata address (169.254.169.254)" in second.content
    )
    assert third.outcome == "success" and "fine" in third.content


def test_on_the_last_attempt_a_search_service_down_is_the_result(network, site, monkeypatch):
    from apps.capabilities.tools import web_search

    monkeypatch.setitem(web_search.ENDPOINTS, "brave", f"{site.base}/search")
    site.route("127.0.0.1", "/search", Page("down", status=502, content_type="text/plain"))
    search = web_search_function("brave", 5, "key")
    result, _ = run_agent(
        [_toolset_of(search, "web_search")],
        [call("web_search", query="a"), call("web_search", query="b"), "ok"],
    )
    assert result.output == "ok"
    first, second = tool_returns(result.all_messages())
    assert first.outcome == "retried" and second.outcome == "success"
    assert "Brave Search answered HTTP 502" in second.content


# --- which method a run gets ----------------------------------------------------------------------


def test_auto_gets_the_local_tool_on_a_model_without_a_native_fetch(network, site, org, member):
    site.route("news.example", "/", Page("<title>Home</title><p>home</p>"))
    agent = agent_with(org, {"id": "web_fetch", "config": {"method": "auto"}})
    run = run_now(member, org, agent, slash_call("web_fetch", url=url(site, "news.example", "/")))
    assert run.status == "completed"
    assert only_return(run).outcome == "success"


@pytest.mark.parametrize(
    ("capability", "sentence"),
    [
        ("web_fetch", "Read web pages is set to the model provider's own fetch"),
        ("web_research", "Web search is set to"),
    ],
)
def test_native_on_a_model_without_it_is_refused_when_the_run_assembles(
    org, member, capability, sentence
):
    agent = agent_with(org, {"id": capability, "config": {"method": "native"}})
    run = run_now(member, org, agent, "hello")
    assert run.status == "failed"
    assert sentence in run.error


def test_native_search_reaches_a_model_that_has_it_and_no_local_tool_is_offered(
    allow_local_model_requests, org, member
):
    with FakeOpenAI() as server:
        profile = compatible_profile(
            org, base_url=server.base_url, model_name="gpt-4o-search-preview"
        )
        agent = published_agent(
            org,
            capabilities=[{"id": "web_research", "config": {"method": "native"}}],
            model_profile_id=profile.pk,
        )
        run = run_now(member, org, agent, "what is new today?")
    assert run.status == "completed", run.error
    (request,) = server.requests
    assert "web_search_options" in request
    assert all(t["function"]["name"] != "web_search" for t in request.get("tools", []))


# --- the publish rules, again when a run assembles ----------------------------------------------


@pytest.mark.parametrize("method", ["native", "auto"])
def test_approval_on_a_provider_run_fetch_is_refused_again_at_assembly(org, member, method):
    # Frozen before the rule (written straight to the version, as an old publish would have).
    agent = agent_with(
        org, {"id": "web_fetch", "config": {"method": method}, "approval": "required"}
    )
    assert AgentVersion.objects.get(agent=agent).spec["capabilities"][0]["approval"] == "required"
    run = run_now(member, org, agent, "hello")
    assert run.status == "failed"
    assert "web_fetch: approval" in run.error and "no approval gate can hold the call" in run.error


def test_a_paid_search_without_a_key_is_refused_again_at_assembly(org, member):
    agent = agent_with(org, {"id": "web_research", "config": {"method": "exa"}})
    run = run_now(member, org, agent, "hello")
    assert run.status == "failed" and "web_research: secret_id" in run.error


def test_local_fetch_with_approval_parks_the_call(network, site, org, member):
    site.route("news.example", "/", Page("<p>x</p>"))
    agent = agent_with(org, {"id": "web_fetch", "tool_approval": {"web_fetch": "required"}})
    run = run_now(member, org, agent, slash_call("web_fetch", url=url(site, "news.example", "/")))
    assert run.status == "awaiting_approval"
    assert site.requests == [] and stored_returns(run) == []
