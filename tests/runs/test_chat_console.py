"""The console's Chat and Activity pages, server side: starting a chat turn, reopening a
conversation with each turn's state, and Activity's filters, orders, slow view and detail."""

import pytest
from django.test import Client

from apps.runs.models import Message, Run

from .factories import published_agent, queued_run
from .history import build_history, duration_ms

pytestmark = pytest.mark.django_db


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_the_nav_links_chat_and_activity(member):
    page = signed_in(member).get("/chat/").content.decode()
    assert 'href="/chat/"' in page and 'href="/activity/"' in page


def test_sending_a_chat_message_starts_a_chat_run_in_a_new_conversation(org, member):
    agent = published_agent(org, name="Helper")
    response = signed_in(member).post(
        "/chat/send/",
        {"agent_id": agent.pk, "message": "hello there"},
        headers={"accept": "application/json"},
    )
    assert response.status_code == 201
    run = Run.objects.get(pk=response.json()["run_id"])
    assert run.surface == "chat" and run.user == member and run.input == "hello there"
    assert response.json()["url"] == f"/chat/{run.conversation_id}/"


def test_a_viewer_cannot_send_and_is_told_why(org, viewer):
    agent = published_agent(org)
    client = signed_in(viewer)
    assert "your role lacks agents:run" in client.get("/chat/").content.decode()
    response = client.post(
        "/chat/send/",
        {"agent_id": agent.pk, "message": "hi"},
        headers={"accept": "application/json"},
    )
    assert response.status_code == 403
    assert not Run.objects.exists()


def test_reopening_a_conversation_shows_each_turns_state_and_marks_a_cancelled_turn(org, member):
    agent = published_agent(org, name="Helper")
    first = queued_run(member, org, agent, text="first question")
    Run.objects.filter(pk=first.pk).update(status="completed")
    Message.objects.create(
        conversation_id=first.conversation_id,
        run=first,
        role="assistant",
        content="first answer",
        run_status="completed",
        cost_usd="0.000123",
        context_tokens=40,
    )
    second = queued_run(member, org, agent, text="second question", conversation=first.conversation)
    Run.objects.filter(pk=second.pk).update(status="cancelled")
    Message.objects.create(
        conversation_id=first.conversation_id,
        run=second,
        role="assistant",
        content="half an ans",
        run_status="cancelled",
        cost_usd="0.000050",
    )
    page = signed_in(member).get(f"/chat/{first.conversation_id}/").content.decode()
    assert page.index("first question") < page.index("first answer") < page.index("second question")
    assert "turn assistant cancelled" in page and ">Cancelled</span>" in page
    assert "$0.000123" in page and "40 tokens in context" in page
    # Nothing is live: the page attaches to no run.
    assert 'data-live-run=""' in page


def test_a_conversation_with_a_live_run_attaches_the_page_to_it(org, member):
    agent = published_agent(org)
    run = queued_run(member, org, agent)
    page = signed_in(member).get(f"/chat/{run.conversation_id}/").content.decode()
    assert f'data-live-run="{run.pk}"' in page


def test_someone_elses_conversation_is_a_404_even_with_runs_view(org, member, builder):
    agent = published_agent(org)
    run = queued_run(member, org, agent)
    assert signed_in(builder).get(f"/chat/{run.conversation_id}/").status_code == 404


# --- Activity -------------------------------------------------------------------------------


@pytest.fixture
def history(org, other_org, owner, member, builder):
    return build_history(org, other_org, [member, builder], count=120)


def row_ids(page: str) -> list[int]:
    import re

    return [int(found) for found in re.findall(r'<tr data-run-id="(\d+)"', page)]


def test_activity_lists_the_filtered_set_with_its_count(owner, history):
    page = signed_in(owner).get("/activity/?status=failed&status=budget_exceeded").content.decode()
    expected = [r for r in history.top_level if r.status in ("failed", "budget_exceeded")]
    assert f"{len(expected)} runs" in page
    assert set(row_ids(page)) <= {r.pk for r in expected}


def test_the_took_header_orders_the_whole_filtered_set_by_duration(owner, history):
    client = signed_in(owner)
    page = client.get("/activity/").content.decode()
    assert 'id="sort-took" href="?order_by=duration&amp;descending=true"' in page
    slowest = sorted(
        (r for r in history.top_level if duration_ms(r) is not None), key=duration_ms, reverse=True
    )
    sorted_page = client.get("/activity/?order_by=duration&descending=true").content.decode()
    assert row_ids(sorted_page) == [r.pk for r in slowest[:25]]
    # Clicking it again flips the direction.
    assert 'id="sort-took" href="?order_by=duration&amp;descending=false"' in sorted_page
    # The dashboard's p95 link uses ?sort=duration.
    assert row_ids(client.get("/activity/?sort=duration").content.decode()) == [
        r.pk for r in slowest[:25]
    ]


def test_the_slow_runs_view_is_the_duration_order_over_thirty_seconds(owner, history):
    page = signed_in(owner).get("/activity/?view=slow").content.decode()
    slow = sorted(
        (r for r in history.top_level if (duration_ms(r) or 0) > 30_000),
        key=duration_ms,
        reverse=True,
    )
    assert f"{len(slow)} runs" in page
    assert row_ids(page) == [r.pk for r in slow[:25]]


def test_a_bad_filter_value_is_said_not_answered_with_an_empty_table(owner, history):
    page = signed_in(owner).get("/activity/?status=complete").content.decode()
    assert 'id="filter-errors"' in page and "complete" in page


def test_the_detail_panel_shows_a_run_its_delegations_and_its_parent(owner, history):
    child = history.delegated[0]
    client = signed_in(owner)
    parent_page = client.get(f"/activity/?run={child.parent_run_id}").content.decode()
    assert 'id="run-detail"' in parent_page and f'href="?run={child.pk}"' in parent_page
    child_page = client.get(f"/activity/?run={child.pk}").content.decode()
    assert f'Delegated by <a href="?run={child.parent_run_id}">' in child_page


def test_a_member_sees_only_their_own_runs_in_activity(org, member, builder):
    agent = published_agent(org)
    mine = queued_run(member, org, agent)
    theirs = queued_run(builder, org, agent)
    client = signed_in(member)
    assert row_ids(client.get("/activity/").content.decode()) == [mine.pk]
    assert 'id="run-detail"' not in client.get(f"/activity/?run={theirs.pk}").content.decode()


def test_the_started_window_is_inclusive_in_activity(owner, history):
    day = history.top_level[0].started_at.date()
    page = signed_in(owner).get(f"/activity/?started_from={day}&started_to={day}").content.decode()
    expected = [r for r in history.top_level if r.started_at and r.started_at.date() == day]
    assert f"{len(expected)} run" in page
