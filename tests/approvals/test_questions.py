"""Questions to the person (ask_user): the card parks the run, only the person asked answers."""

import datetime as dt

import pytest
from django.utils import timezone

from apps.approvals import services
from apps.approvals.models import Question
from apps.runs.events import frames_after
from apps.runs.models import RunStep
from apps.runs.resume import run_resume
from tests.runs.factories import published_agent

from .factories import run_now


@pytest.fixture
def asking_agent(org):
    return published_agent(org, name="Asker", capabilities=[{"id": "ask_user"}])


@pytest.mark.django_db
def test_a_question_in_chat_parks_the_run_awaiting_an_answer(org, member, asking_agent, client_for):
    run = run_now(member, org, asking_agent, "/ask Should I close the account?", surface="chat")

    assert run.status == "awaiting_answer"
    question = Question.objects.get(run=run)
    assert question.asked_user == member
    assert question.questions[0]["question"] == "Should I close the account?"
    assert [o["label"] for o in question.questions[0]["options"]] == ["Yes", "No"]
    assert RunStep.objects.get(run=run, kind="tool_call").detail["status"] == "awaiting_answer"
    assert any(f["type"] == "question" for f in frames_after(run.pk))

    card = client_for(member, org).get(f"/api/v1/runs/{run.pk}/questions/").json()
    assert card["status"] == "awaiting_answer" and card["questions"][0]["id"] == question.pk


@pytest.mark.django_db
def test_answering_continues_the_run_from_where_it_stopped(org, member, asking_agent, client_for):
    run = run_now(member, org, asking_agent, "/ask Should I close the account?", surface="chat")

    response = client_for(member, org).post(
        f"/api/v1/runs/{run.pk}/answers/",
        {"answers": [{"header": "Choice", "selected": ["Yes"]}]},
        format="json",
    )
    assert response.status_code == 200, response.content
    assert response.json()["status"] == "answered"

    run_resume(run_id=run.pk)
    run.refresh_from_db()
    assert run.status == "completed"
    assert "Yes" in run.output
    assert RunStep.objects.get(run=run, kind="tool_call").detail["status"] == "settled"


@pytest.mark.django_db
def test_only_the_person_asked_may_answer(
    org, member, owner, outsider, other_org, asking_agent, client_for
):
    run = run_now(member, org, asking_agent, "/ask Which one?", surface="chat")
    body = {"answers": [{"header": "Choice", "selected": ["No"]}]}

    assert (
        client_for(owner, org)
        .post(f"/api/v1/runs/{run.pk}/answers/", body, format="json")
        .status_code
        == 403
    )
    assert (
        client_for(outsider, other_org)
        .post(f"/api/v1/runs/{run.pk}/answers/", body, format="json")
        .status_code
        == 404
    )
    assert Question.objects.get(run=run).status == "pending"


@pytest.mark.django_db
def test_an_answer_that_does_not_fit_the_card_is_a_422(org, member, asking_agent, client_for):
    run = run_now(member, org, asking_agent, "/ask Which one?", surface="chat")
    response = client_for(member, org).post(
        f"/api/v1/runs/{run.pk}/answers/",
        {"answers": [{"header": "Choice", "selected": ["Maybe"]}]},
        format="json",
    )
    assert response.status_code == 422


@pytest.mark.django_db
def test_answering_twice_is_a_409(org, member, asking_agent, client_for):
    run = run_now(member, org, asking_agent, "/ask Which one?", surface="chat")
    question = Question.objects.get(run=run)
    client = client_for(member, org)
    body = {"question_id": question.pk, "answers": [{"header": "Choice", "selected": ["No"]}]}
    assert client.post(f"/api/v1/runs/{run.pk}/answers/", body, format="json").status_code == 200
    assert client.post(f"/api/v1/runs/{run.pk}/answers/", body, format="json").status_code == 409


@pytest.mark.django_db
@pytest.mark.parametrize("surface", ["api", "schedule", "webhook"])
def test_where_nobody_can_answer_the_agent_is_told_the_person_declined(
    org, member, asking_agent, surface
):
    run = run_now(member, org, asking_agent, "/ask Which one?", surface=surface)

    assert run.status == "completed"
    assert "declined to answer" in run.output
    assert not Question.objects.filter(run=run).exists()


@pytest.mark.django_db
def test_an_unanswered_question_cancels_the_run_after_the_expiry_and_the_step_says_so(
    org, member, asking_agent, settings
):
    run = run_now(member, org, asking_agent, "/ask Which one?", surface="chat")
    requests = run.request_count

    assert services.questions_expire_stale() == 0
    later = timezone.now() + dt.timedelta(hours=settings.QUESTION_EXPIRY_HOURS + 1)
    assert services.questions_expire_stale(now=later) == 1

    run.refresh_from_db()
    assert run.status == "cancelled" and run.request_count == requests
    assert "did not answer" in run.error
    step = RunStep.objects.get(run=run, kind="tool_call")
    assert step.detail["status"] == "expired" and "did not answer in time" in step.detail["result"]
    assert Question.objects.get(run=run).status == "expired"
