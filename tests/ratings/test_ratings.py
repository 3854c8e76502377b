"""Ratings: a thumb per person per turn, the run history's rated filter, the transcript's
ratings, the summary and its permissions."""

from __future__ import annotations

import pytest

from apps.ratings.models import MessageRating
from apps.runs.models import Message, Run
from apps.runs.runner import execute_run
from tests.runs.factories import published_agent, queued_run


def finished_run(actor, org, agent, text="hello") -> Run:
    run = queued_run(actor, org, agent, text)
    execute_run(run.pk)
    return Run.objects.get(pk=run.pk)


def answer_of(run) -> Message:
    return Message.objects.get(run=run, role="assistant")


@pytest.fixture
def agent(org, builder):
    return published_agent(org, created_by=builder)


def rate(client, message, thumb, comment=""):
    return client.put(
        f"/api/v1/messages/{message.pk}/rating/",
        {"thumb": thumb, "comment": comment},
        format="json",
    )


@pytest.mark.django_db
def test_one_rating_per_person_per_turn_and_it_can_change(org, member, agent, client_for):
    run = finished_run(member, org, agent)
    client = client_for(member, org)
    first = rate(client, answer_of(run), "up")
    assert first.status_code == 200, first.content
    assert first.json()["my_rating"] == "up" and first.json()["ratings_up"] == 1
    changed = rate(client, answer_of(run), "down", "Wrong figures").json()
    assert (changed["my_rating"], changed["ratings_up"], changed["ratings_down"]) == ("down", 0, 1)
    assert MessageRating.objects.count() == 1
    assert client.delete(f"/api/v1/messages/{answer_of(run).pk}/rating/").status_code == 204
    assert MessageRating.objects.count() == 0


@pytest.mark.django_db
def test_a_users_message_and_bad_thumbs_are_refused(org, member, agent, client_for):
    run = finished_run(member, org, agent)
    client = client_for(member, org)
    question = Message.objects.get(run=run, role="user")
    assert rate(client, question, "up").status_code == 422
    assert rate(client, answer_of(run), "sideways").status_code == 422


@pytest.mark.django_db
def test_who_may_rate_a_turn(org, member, viewer, builder, outsider, other_org, agent, client_for):
    run = finished_run(member, org, agent)
    # Someone else's run without runs:view: absent. runs:view reads it, so may rate it.
    assert rate(client_for(viewer, org), answer_of(run), "up").status_code == 404
    assert rate(client_for(builder, org), answer_of(run), "up").status_code == 200
    assert rate(client_for(outsider, other_org), answer_of(run), "up").status_code == 404


@pytest.mark.django_db
def test_rated_filters_the_run_history_and_rows_say_down_rated(
    org, member, builder, agent, client_for
):
    liked = finished_run(member, org, agent, "one")
    disliked = finished_run(member, org, agent, "two")
    finished_run(member, org, agent, "three")
    rate(client_for(member, org), answer_of(liked), "up")
    rate(client_for(member, org), answer_of(disliked), "down")
    rate(client_for(builder, org), answer_of(disliked), "down", "Still wrong")
    client = client_for(builder, org)

    down = client.get("/api/v1/runs/", {"rated": "down"}).json()
    assert [r["id"] for r in down["results"]] == [disliked.pk] and down["count"] == 1
    up = client.get("/api/v1/runs/", {"rated": "up"}).json()
    assert [r["id"] for r in up["results"]] == [liked.pk]
    rows = {r["id"]: r["down_rated"] for r in client.get("/api/v1/runs/").json()["results"]}
    assert rows[disliked.pk] is True and rows[liked.pk] is False
    assert client.get(f"/api/v1/runs/{disliked.pk}/").json()["down_rated"] is True
    assert client.get("/api/v1/runs/", {"rated": "meh"}).status_code == 422


@pytest.mark.django_db
def test_the_transcript_carries_the_readers_thumb_the_counts_and_the_latest_negative_comment(
    org, member, builder, operator, agent, client_for
):
    run = finished_run(member, org, agent)
    answer = answer_of(run)
    rate(client_for(member, org), answer, "down", "Older objection")
    rate(client_for(operator, org), answer, "up", "A positive comment is never shown")
    rate(client_for(builder, org), answer, "down", "Newest objection")

    turns = client_for(member, org).get(f"/api/v1/runs/{run.pk}/transcript/").json()["turns"]
    question, reply = turns
    assert question["my_rating"] is None and question["ratings_up"] == 0
    assert reply["my_rating"] == "down"
    assert (reply["ratings_up"], reply["ratings_down"]) == (1, 2)
    assert reply["latest_down_comment"] == "Newest objection"


@pytest.mark.django_db
def test_the_summary_counts_the_organization_under_runs_view_and_a_member_their_own(
    org, member, builder, viewer, outsider, other_org, agent, client_for
):
    mine = finished_run(member, org, agent, "mine")
    theirs = finished_run(builder, org, agent, "theirs")
    rate(client_for(member, org), answer_of(mine), "up")
    rate(client_for(builder, org), answer_of(mine), "down", "secret words")
    rate(client_for(builder, org), answer_of(theirs), "up")

    org_summary = client_for(builder, org).get("/api/v1/ratings/summary/", {"days": 7}).json()
    assert (org_summary["up"], org_summary["down"], org_summary["total"]) == (2, 1, 3)
    assert org_summary["up_share"] == round(2 / 3, 4)
    assert len(org_summary["daily"]) == 7 and sum(d["up"] for d in org_summary["daily"]) == 2
    assert "secret words" not in str(org_summary)

    member_client = client_for(member, org)
    assert member_client.get("/api/v1/ratings/summary/").status_code == 403
    own = member_client.get("/api/v1/ratings/summary/", {"scope": "own"}).json()
    assert (own["up"], own["down"]) == (1, 1)
    assert (
        client_for(viewer, org).get("/api/v1/ratings/summary/", {"scope": "own"}).json()["total"]
        == 0
    )
    assert client_for(outsider, other_org).get("/api/v1/ratings/summary/").json()["total"] == 0
    assert member_client.get("/api/v1/ratings/summary/", {"scope": "all"}).status_code == 422
