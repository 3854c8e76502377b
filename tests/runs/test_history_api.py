"""GET /api/v1/runs/: every filter and order of seed 003 over a few hundred runs, counts that
describe the filtered set, durations ordered over the whole set in SQL, and 422s for values
outside their type; reading one run is authorized by runs:view, not ownership."""

import datetime as dt
from decimal import Decimal

import pytest

from apps.agents.models import ModelProfile
from apps.runs.models import Message, Run

from .factories import published_agent
from .history import BASE, build_history, duration_ms

pytestmark = pytest.mark.django_db


@pytest.fixture
def history(org, other_org, owner, member, builder, outsider):
    return build_history(org, other_org, [member, builder])


@pytest.fixture
def api(owner, org, client_for):
    client = client_for(owner, org)

    def get(query: str = "", **params):
        response = client.get(f"/api/v1/runs/?{query}", params)
        return response

    return get


def ids(response) -> list[int]:
    return [row["id"] for row in response.json()["results"]]


def everything(api, query: str = "") -> list[dict]:
    """Every page of a query, to check an order across the whole set."""
    rows, offset = [], 0
    while True:
        body = api(f"{query}&limit=100&offset={offset}").json()
        rows += body["results"]
        offset += 100
        if offset >= body["count"]:
            return rows


def test_the_default_lists_top_level_runs_newest_first_and_counts_them(api, history):
    body = api("limit=25").json()
    assert body["count"] == len(history.top_level)
    started = [row["started_at"] or row["created_at"] for row in body["results"]]
    assert len(body["results"]) == 25
    delegated = {run.pk for run in history.delegated}
    assert not delegated & set(ids(api("limit=500")))
    assert history.other_org_run.pk not in ids(api("limit=500"))
    # The queued runs (no started_at) are listed by when they were asked for: now, newest.
    assert started == sorted(started, reverse=True)


def test_status_repeats_and_every_filter_narrows_the_count_as_well_as_the_page(api, history):
    response = api("status=failed&status=budget_exceeded&limit=5")
    expected = [r for r in history.top_level if r.status in ("failed", "budget_exceeded")]
    assert response.json()["count"] == len(expected)
    assert len(response.json()["results"]) == 5
    assert {row["status"] for row in everything(api, "status=failed&status=budget_exceeded")} == {
        "failed",
        "budget_exceeded",
    }


def test_surface_user_and_model_label_filters(api, history, builder):
    expected = [r for r in history.top_level if r.surface == "slack" and r.user_id == builder.pk]
    response = api(f"surface=slack&user_id={builder.pk}")
    assert response.json()["count"] == len(expected) > 0
    labelled = [r for r in history.top_level if r.model_label == "GPT-4o (gpt-4o)"]
    assert api("model_label=GPT-4o (gpt-4o)").json()["count"] == len(labelled)
    # Exact match: a prefix is not the label.
    assert api("model_label=GPT-4o").json()["count"] == 0


def test_started_from_and_started_to_are_inclusive_whole_days(api, history):
    day_two = (BASE + dt.timedelta(days=1)).date()
    response = api(f"started_from={day_two}&started_to={day_two}")
    expected = [r for r in history.top_level if r.started_at and r.started_at.date() == day_two]
    assert response.json()["count"] == len(expected) == 21  # 24 hours less 3 queued runs
    # An exact instant is inclusive at both ends too.
    first = BASE + dt.timedelta(hours=24)
    exact = api("", started_from=first.isoformat(), started_to=first.isoformat())
    assert [row["started_at"][:19] for row in exact.json()["results"]] == [first.isoformat()[:19]]


def test_took_over_ms_leaves_unfinished_runs_out_rather_than_counting_them_as_zero(api, history):
    expected = [r for r in history.top_level if (duration_ms(r) or 0) > 30_000]
    response = api("took_over_ms=30000")
    assert response.json()["count"] == len(expected)
    rows = everything(api, "took_over_ms=30000")
    assert all(row["duration_ms"] > 30_000 and row["ended_at"] for row in rows)


def test_duration_order_sorts_the_whole_filtered_set_with_unfinished_runs_last_both_ways(
    api, history
):
    finished = sorted(
        (r for r in history.top_level if duration_ms(r) is not None), key=duration_ms, reverse=True
    )
    slowest_page = api("order_by=duration&limit=25").json()["results"]
    assert [row["duration_ms"] for row in slowest_page] == [duration_ms(r) for r in finished[:25]]
    for descending in ("true", "false"):
        rows = everything(api, f"order_by=duration&descending={descending}")
        durations = [row["duration_ms"] for row in rows]
        known = [d for d in durations if d is not None]
        assert known == sorted(known, reverse=descending == "true")
        # Every run without an end is after every run with one.
        first_unfinished = next(i for i, row in enumerate(rows) if row["ended_at"] is None)
        assert all(row["ended_at"] is None for row in rows[first_unfinished:])


def test_cost_and_token_orders_put_unfinished_runs_last_not_cheapest(api, history):
    for order, value in (
        ("cost", lambda row: Decimal(row["cost_usd"])),
        ("tokens", lambda row: row["input_tokens"] + row["output_tokens"]),
    ):
        rows = everything(api, f"order_by={order}&descending=false")
        finished = [row for row in rows if row["ended_at"]]
        assert [value(row) for row in finished] == sorted(value(row) for row in finished)
        assert rows[-1]["ended_at"] is None and rows[0]["ended_at"] is not None
        top = api(f"order_by={order}&limit=1").json()["results"][0]
        assert value(top) == max(value(row) for row in finished)


def test_an_agents_own_history_includes_its_delegations_and_parent_run_id_wins(api, history):
    helper, researcher = history.agents
    top_level = [r for r in history.top_level if r.agent_id == researcher.pk]
    assert api(f"agent_id={researcher.pk}").json()["count"] == len(top_level)
    own = api(f"agent_id={researcher.pk}&include_delegations=true").json()["count"]
    assert own == len(top_level) + len(history.delegated)
    parent = history.delegated[0].parent_run_id
    children = api(f"parent_run_id={parent}&include_delegations=false")
    assert ids(children) == [history.delegated[0].pk]


def test_agent_version_filter(api, history):
    helper = history.agents[0]
    v2 = helper.versions.get(number=2)
    expected = [r for r in history.top_level if r.agent_version_id == v2.pk]
    assert api(f"agent_version_id={v2.pk}").json()["count"] == len(expected) > 0


def test_filters_on_features_nothing_records_yet_match_no_rows(api, history):
    # No run records an environment and no message carries a rating yet.
    assert api("environment_id=1").json()["count"] == 0
    assert api("rated=down").json()["count"] == 0


def test_the_exposure_filter_finds_the_runs_a_chat_binding_admitted(api, history):
    # apps.channels stamps the binding on the runs it starts (tests/channels covers the rest).
    run = history.top_level[0]
    Run.objects.filter(pk=run.pk).update(exposure_id=4242)
    assert ids(api("exposure_id=4242")) == [run.pk]
    assert api("exposure_id=4243").json()["count"] == 0


@pytest.mark.parametrize(
    "query, field",
    [
        ("status=complete", "status"),
        ("status=failed&status=nope", "status"),
        ("surface=fax", "surface"),
        ("order_by=cost_usd", "order_by"),
        ("order_by=id;DROP TABLE runs_run", "order_by"),
        ("took_over_ms=fast", "took_over_ms"),
        ("took_over_ms=-1", "took_over_ms"),
        ("started_from=yesterday", "started_from"),
        ("started_to=2025-02-30", "started_to"),
        ("descending=maybe", "descending"),
        ("include_delegations=sure", "include_delegations"),
        ("user_id=me", "user_id"),
        ("agent_id=x", "agent_id"),
        ("parent_run_id=1.5", "parent_run_id"),
        ("environment_id=prod", "environment_id"),
        ("exposure_id=x", "exposure_id"),
        ("agent_version_id=x", "agent_version_id"),
        ("rated=meh", "rated"),
    ],
)
def test_a_value_outside_its_type_is_a_422_naming_the_field(api, history, query, field):
    response = api(query)
    assert response.status_code == 422, response.content
    assert field in response.json()


# --- reading one run: authorized, not owned ----------------------------------------------


def test_runs_view_reads_a_colleagues_run_and_its_transcript(org, member, builder, client_for):
    agent = published_agent(org)
    from .factories import queued_run

    run = queued_run(member, org, agent, text="what's our refund policy?")
    reader = client_for(builder, org)
    assert reader.get(f"/api/v1/runs/{run.pk}/").status_code == 200
    transcript = reader.get(f"/api/v1/runs/{run.pk}/transcript/").json()
    assert transcript["conversation_id"] == run.conversation_id
    assert [turn["content"] for turn in transcript["turns"]] == ["what's our refund policy?"]


def test_a_member_reads_their_own_runs_only(org, member, builder, client_for):
    agent = published_agent(org)
    from .factories import queued_run

    theirs = queued_run(builder, org, agent)
    mine = queued_run(member, org, agent)
    client = client_for(member, org)
    assert client.get(f"/api/v1/runs/{mine.pk}/").status_code == 200
    assert client.get(f"/api/v1/runs/{theirs.pk}/").status_code == 404
    assert client.get(f"/api/v1/runs/{theirs.pk}/transcript/").status_code == 404
    assert ids(client.get("/api/v1/runs/")) == [mine.pk]


def test_another_organizations_run_is_the_same_404_as_a_missing_one(
    org, other_org, owner, outsider, client_for
):
    theirs = published_agent(other_org)
    from .factories import queued_run

    run = queued_run(outsider, other_org, theirs)
    client = client_for(owner, org)
    foreign = client.get(f"/api/v1/runs/{run.pk}/")
    missing = client.get("/api/v1/runs/999999/")
    assert foreign.status_code == missing.status_code == 404
    assert foreign.content == missing.content
    assert client.get(f"/api/v1/runs/{run.pk}/transcript/").content == missing.content


def test_a_run_without_a_conversation_says_conversation_id_null(org, owner, client_for):
    agent = published_agent(org)
    run = Run.objects.create(
        organization=org,
        agent=agent,
        agent_version=agent.current_version,
        user=owner,
        input="batch job",
    )
    client = client_for(owner, org)
    assert client.get(f"/api/v1/runs/{run.pk}/").json()["conversation_id"] is None
    transcript = client.get(f"/api/v1/runs/{run.pk}/transcript/").json()
    assert transcript["conversation_id"] is None and transcript["turns"] is None


# --- the context gauge --------------------------------------------------------------------


def _answered_turn(org, owner, agent, context_tokens):
    from .factories import queued_run

    run = queued_run(owner, org, agent)
    Message.objects.create(
        conversation_id=run.conversation_id,
        run=run,
        role="assistant",
        content="Done.",
        run_status="completed",
        context_tokens=context_tokens,
    )
    return run


def test_the_gauge_reports_a_ratio_against_a_known_window(org, owner, client_for):
    profile = ModelProfile.objects.create(
        organization=org,
        label="Local",
        provider="openai_compatible",
        model_name="local-7b",
        base_url="http://127.0.0.1:9/v1",
        context_window=8000,
    )
    agent = published_agent(org, model_profile_id=profile.pk)
    run = _answered_turn(org, owner, agent, 6000)
    turn = client_for(owner, org).get(f"/api/v1/runs/{run.pk}/transcript/").json()["turns"][-1]
    assert turn["context_tokens"] == 6000
    assert turn["context"] == {"input_tokens": 6000, "window": 8000, "ratio": 0.75}


def test_the_gauge_falls_back_to_the_price_registrys_window(org, owner, client_for):
    profile = ModelProfile.objects.create(
        organization=org, label="4o", provider="openai", model_name="gpt-4o"
    )
    agent = published_agent(org, model_profile_id=profile.pk)
    run = _answered_turn(org, owner, agent, 64000)
    turn = client_for(owner, org).get(f"/api/v1/runs/{run.pk}/transcript/").json()["turns"][-1]
    assert turn["context"] == {"input_tokens": 64000, "window": 128000, "ratio": 0.5}


def test_the_gauge_draws_no_ratio_when_the_window_is_unknown(org, owner, client_for):
    profile = ModelProfile.objects.create(
        organization=org,
        label="Mystery",
        provider="openai_compatible",
        model_name="mystery-model",
        base_url="http://127.0.0.1:9/v1",
    )
    agent = published_agent(org, model_profile_id=profile.pk)
    run = _answered_turn(org, owner, agent, 5000)
    turn = client_for(owner, org).get(f"/api/v1/runs/{run.pk}/transcript/").json()["turns"][-1]
    assert turn["context"] == {"input_tokens": 5000}
