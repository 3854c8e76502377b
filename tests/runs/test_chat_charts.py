"""Charts in chat (issue 8): the `create_chart` result frame carries the chart drawn on the server
as escaped SVG, and reopening the conversation draws the same chart from the stored data."""

import json

import pytest
from django.test import Client

from apps.agents.template import TEMPLATE_AGENT_NAME
from apps.orgs.services import organization_create
from apps.runs.events import frames_after
from apps.runs.models import Run
from apps.runs.runner import execute_run
from apps.runs.services import run_create
from tests.factories import UserFactory

from .factories import published_agent

pytestmark = pytest.mark.django_db

THREE = {
    "title": "Sales",
    "kind": "bar",
    "x_values": ["Jan", "Feb", "Mar"],
    "series": [{"name": "EUR", "values": [3, 5, 8]}],
}


def chart_call(chart=THREE) -> str:
    return "/call create_chart " + json.dumps(chart)


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def chat_run(user, organization, agent, text, conversation=None) -> Run:
    run = run_create(
        actor=user,
        organization=organization,
        agent=agent,
        input=text,
        surface="chat",
        conversation=conversation,
    )
    execute_run(run.pk)
    return Run.objects.get(pk=run.pk)


@pytest.fixture
def charting(org):
    return published_agent(org, name="Charts", capabilities=[{"id": "charts"}])


def test_the_chart_result_frame_carries_the_server_drawn_svg(org, member, charting):
    run = chat_run(member, org, charting, chart_call())
    assert run.status == "completed", run.error
    result = next(f for f in frames_after(run.pk) if f["type"] == "tool_result")
    assert result["tool_name"] == "create_chart"
    assert result["chart_svg"].startswith("<svg") and result["chart_svg"].rstrip().endswith(
        "</svg>"
    )
    assert "Sales" in result["chart_svg"] and "Mar" in result["chart_svg"]


def test_a_tool_result_that_is_no_chart_carries_no_svg(org, member):
    agent = published_agent(org, name="Planner", capabilities=[{"id": "planning"}])
    run = chat_run(member, org, agent, '/call add_task {"content": "Write it"}')
    result = next(f for f in frames_after(run.pk) if f["type"] == "tool_result")
    assert "chart_svg" not in result


def test_chart_text_is_escaped_in_the_frame_and_on_reload(org, member, charting):
    hostile = {
        **THREE,
        "title": "<script>alert(1)</script>",
        "series": [{"name": "<b>x</b>", "values": [1, 2, 3]}],
    }
    run = chat_run(member, org, charting, chart_call(hostile))
    result = next(f for f in frames_after(run.pk) if f["type"] == "tool_result")
    assert "<script>" not in result["chart_svg"] and "&lt;script&gt;" in result["chart_svg"]
    page = signed_in(member).get(f"/chat/{run.conversation_id}/").content.decode()
    assert "<script>alert(1)" not in page and "&lt;script&gt;alert(1)" in page


def test_reopening_the_conversation_draws_the_same_chart(org, member, charting):
    run = chat_run(member, org, charting, chart_call())
    live = next(f for f in frames_after(run.pk) if f["type"] == "tool_result")["chart_svg"]
    page = signed_in(member).get(f"/chat/{run.conversation_id}/").content.decode()
    assert page.count('<figure class="chart"') == 1
    assert live in page


def test_each_chart_is_drawn_once_on_the_turn_that_made_it(org, member, charting):
    first = chat_run(member, org, charting, chart_call())
    second_chart = {**THREE, "title": "Costs", "series": [{"name": "EUR", "values": [1, 1, 2]}]}
    second = chat_run(
        member, org, charting, chart_call(second_chart), conversation=first.conversation
    )
    assert second.status == "completed", second.error
    # The second run's transcript carries the first run's history too; it is not drawn twice.
    page = signed_in(member).get(f"/chat/{first.conversation_id}/").content.decode()
    assert page.count('<figure class="chart"') == 2
    assert page.index("Sales") < page.index("Costs")
    second_turn = page.index(f'class="turn assistant" data-run-id="{second.pk}"')
    assert page.index("bar chart: Sales") < second_turn < page.index("bar chart: Costs")


def test_the_template_agent_of_a_fresh_organization_draws_a_chart(db):
    founder = UserFactory(email="founder@fresh.test")
    organization = organization_create(actor=None, name="Fresh", owner=founder)
    agent = organization.agents.get(name=TEMPLATE_AGENT_NAME)
    run = chat_run(founder, organization, agent, chart_call())
    assert run.status == "completed", run.error
    assert any(f.get("chart_svg") for f in frames_after(run.pk))
    page = signed_in(founder).get(f"/chat/{run.conversation_id}/").content.decode()
    assert '<figure class="chart"' in page and "<svg" in page
