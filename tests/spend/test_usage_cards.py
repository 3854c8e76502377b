"""GET /stats/usage/'s dashboard cards against figures worked out by hand from a small set of
runs: top-level rows, one delegation, one unpriced (partial) row, one parked run, ratings."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from django.utils import timezone

from apps.ratings.models import MessageRating
from apps.runs.models import Conversation, Message, Run
from tests.runs.factories import published_agent

from .builders import finished_run


def took(run: Run, ms: int | None) -> Run:
    run.ended_at = None if ms is None else run.started_at + dt.timedelta(milliseconds=ms)
    run.save(update_fields=["ended_at"])
    return run


def rated(run: Run, user, thumb: str) -> None:
    conversation = Conversation.objects.create(
        organization=run.organization, agent=run.agent, user=run.user
    )
    message = Message.objects.create(conversation=conversation, run=run, role="assistant")
    MessageRating.objects.create(
        organization=run.organization, message=message, run=run, user=user, thumb=thumb
    )


@pytest.fixture
def usage(org, other_org, outsider, member, builder):
    now = timezone.now() - dt.timedelta(hours=1)
    alpha = published_agent(org, name="Alpha")
    beta = published_agent(org, name="Beta")
    r1 = took(
        finished_run(alpha, cost="1.00", user=member, started_at=now, provider="openai"), 1000
    )
    Run.objects.filter(pk=r1.pk).update(surface="chat")
    r2 = took(
        finished_run(
            alpha, cost="0.10", user=builder, started_at=now, provider="openai", status="failed"
        ),
        3000,
    )
    r3 = took(finished_run(beta, user=member, started_at=now, status="awaiting_approval"), None)
    Run.objects.filter(pk=r3.pk).update(surface="slack")
    r4 = took(
        finished_run(
            alpha, cost="0.50", user=builder, started_at=now, provider="anthropic", partial=True
        ),
        5000,
    )
    d1 = finished_run(beta, cost="0.40", parent=Run.objects.get(pk=r1.pk), provider="anthropic")
    # Outside the window, and another organization's: in no figure.
    finished_run(alpha, cost="9", user=member, started_at=now - dt.timedelta(days=40))
    finished_run(published_agent(other_org), cost="7", user=outsider, started_at=now)
    rated(Run.objects.get(pk=r1.pk), member, "up")
    rated(Run.objects.get(pk=r1.pk), builder, "down")
    rated(r2, member, "down")
    rated(d1, member, "down")  # a delegated row's rating: not in the top-level quality block
    return {"alpha": alpha, "beta": beta, "runs": (r1, r2, r3, r4, d1)}


@pytest.mark.django_db
def test_every_card_matches_the_figures_worked_out_by_hand(org, builder, usage, client_for):
    body = client_for(builder, org).get("/api/v1/stats/usage/?days=7&group_by=version").json()

    assert body["total_runs"] == 4
    # The donut sums to total_runs, and its awaiting_approval equals the approvals card.
    assert body["outcomes"] == {"awaiting_approval": 1, "completed": 2, "failed": 1}
    assert sum(body["outcomes"].values()) == body["total_runs"]
    assert body["outcomes"]["awaiting_approval"] == body["approvals_waiting"] == 1
    assert body["surfaces"] == [
        {"surface": "api", "run_count": 2},
        {"surface": "chat", "run_count": 1},
        {"surface": "slack", "run_count": 1},
    ]
    # Finished top-level runs took 1 s, 3 s and 5 s (the parked one has no duration):
    # percentile_cont → p50 3000, p95 3000 + 0.9 × 2000 = 4800, p99 3000 + 0.98 × 2000 = 4960.
    assert body["latency"] == {"finished_runs": 3, "p50": 3000, "p95": 4800, "p99": 4960}
    assert body["active_people"] == 2
    # Each row's own spend: r1 1.00 − its delegation 0.40 = 0.60 + r2 0.10 → openai 0.70;
    # the delegation 0.40 + r4 0.50 → anthropic 0.90, one of them a floor.
    providers = {row["provider"]: row for row in body["by_provider"]}
    assert Decimal(providers["openai"]["cost_usd"]) == Decimal("0.70")
    assert Decimal(providers["anthropic"]["cost_usd"]) == Decimal("0.90")
    assert providers["anthropic"]["partial_run_count"] == 1
    assert sum(Decimal(row["cost_usd"]) for row in body["by_provider"]) == Decimal("1.60")
    # Adoption includes the delegation: 3 + 2 bars beside a total of 4.
    assert [
        (r["agent_name"], r["run_count"], r["delegated_run_count"]) for r in body["by_agent"]
    ] == [
        ("Alpha", 3, 0),
        ("Beta", 2, 1),
    ]
    people = {row["email"]: row["run_count"] for row in body["by_user"]}
    assert people == {"member@acme.test": 2, "builder@acme.test": 2}
    # Quality over top-level runs: r1 up + down, r2 down (the delegation's thumb is not here).
    quality = dict(body["quality"])
    daily = quality.pop("daily")
    assert quality == {"up": 1, "down": 2, "rated_runs": 2, "up_share": 0.3333}
    # One point per day of the 7-day window; every thumb lands on the day its run started.
    assert len(daily) == 7
    started = usage["runs"][0].started_at.date().isoformat()
    assert [p for p in daily if p["up"] or p["down"]] == [{"date": started, "up": 1, "down": 2}]
    versions = {row["agent_name"]: row for row in body["by_version"]}
    assert (versions["Alpha"]["run_count"], versions["Alpha"]["completed"]) == (3, 2)
    assert Decimal(versions["Alpha"]["cost_usd"]) == Decimal("1.60")
    assert versions["Alpha"]["partial_run_count"] == 1
    assert versions["Alpha"]["down_rated_runs"] == 2
    assert (versions["Beta"]["run_count"], versions["Beta"]["down_rated_runs"]) == (2, 1)


@pytest.mark.django_db
def test_without_group_by_version_there_is_no_version_block_and_a_bad_grouping_is_a_422(
    org, builder, usage, client_for
):
    client = client_for(builder, org)
    assert "by_version" not in client.get("/api/v1/stats/usage/?days=7").json()
    assert client.get("/api/v1/stats/usage/?group_by=agent").status_code == 422


@pytest.mark.django_db
def test_a_members_own_cards_count_only_their_runs(org, member, usage, client_for):
    body = client_for(member, org).get("/api/v1/stats/usage/?scope=own&days=7").json()
    assert body["total_runs"] == 2
    assert body["outcomes"] == {"awaiting_approval": 1, "completed": 1}
    assert body["active_people"] == 1
    assert [row["email"] for row in body["by_user"]] == ["member@acme.test"]
    assert body["latency"]["finished_runs"] == 1 and body["latency"]["p50"] == 1000


def _signed_in(user):
    from django.test import Client

    client = Client()
    client.force_login(user)
    return client


@pytest.mark.django_db
def test_the_dashboard_cards_link_to_the_rows_behind_them(org, builder, member, usage):
    page = _signed_in(builder).get("/").content.decode()
    assert 'id="dashboard-usage"' in page
    assert 'href="/activity/?period=30d" id="usage-total">4 runs</a>' in page
    assert '/activity/?surface=slack&amp;period=30d">slack</a>' in page
    assert '/activity/?order_by=duration&amp;period=30d" id="usage-p95">4.8 s</a>' in page
    assert 'href="/activity/?tab=approvals" id="usage-approvals">1</a>' in page
    assert '/activity/?rated=down&amp;period=30d" id="usage-rated-down">👎 2' in page
    beta = usage["beta"]
    assert f"/activity/?agent_id={beta.pk}&amp;include_delegations=true&amp;period=30d" in page
    assert f"/activity/?user_id={member.pk}&amp;period=30d" in page
    assert "≥ $0.90" in page  # anthropic's own spend is a floor
    assert "may add up to more than the 4 top-level runs" in page
    # Without runs:view the cards are absent, not a question answered with a refusal.
    assert 'id="dashboard-usage"' not in _signed_in(member).get("/").content.decode()


@pytest.mark.django_db
def test_every_card_is_a_chart_with_a_title_a_description_and_its_figures(org, builder, usage):
    page = _signed_in(builder).get("/").content.decode()
    for card in ("outcomes", "latency", "surfaces", "quality", "providers", "agents"):
        section = page.split(f'id="usage-card-{card}"', 1)[1].split("</section>", 1)[0]
        assert 'role="img"' in section and "<title" in section and "<desc" in section, card
    latency = page.split('id="usage-card-latency"', 1)[1].split("</section>", 1)[0]
    assert "half took at most 3.0 s, 95 % at most 4.8 s, 99 % at most 5.0 s" in latency
    agents = page.split('id="usage-card-agents"', 1)[1].split("</section>", 1)[0]
    # The adoption bars: 3 + 2 = 5 beside 4 top-level runs, Beta's delegated run drawn apart.
    assert "add up to 5 beside 4 top-level run(s)" in agents
    assert agents.count('class="bar part"') == 1
    providers = page.split('id="usage-card-providers"', 1)[1].split("</section>", 1)[0]
    assert providers.count('class="bar floor"') == 1 and "1 hatched bar(s) are floors" in providers


@pytest.mark.django_db
@pytest.mark.parametrize(
    "query, count",
    [
        ("surface=slack", 1),
        ("surface=api", 2),
        ("status=failed", 1),
        ("order_by=duration", 4),
        ("rated=down", 2),
        ("include_delegations=true&agent_id={beta}", 2),
    ],
)
def test_each_cards_link_lists_as_many_runs_as_the_card_counts(
    org, builder, usage, client_for, query, count
):
    query = query.format(beta=usage["beta"].pk)
    body = client_for(builder, org).get(f"/api/v1/runs/?{query}&period=30d").json()
    assert body["count"] == count
    page = _signed_in(builder).get(f"/activity/?{query}&period=30d").content.decode()
    assert f'id="run-count">{count} run{"" if count == 1 else "s"}' in page


@pytest.mark.django_db
def test_the_quality_series_counts_each_thumb_on_the_day_its_run_started(
    org, member, builder, client_for
):
    today = timezone.now()
    agent = published_agent(org, name="Rated")
    earlier = finished_run(agent, user=member, started_at=today - dt.timedelta(days=2))
    latest = finished_run(agent, user=member, started_at=today)
    child = finished_run(agent, parent=latest)
    old = finished_run(agent, user=member, started_at=today - dt.timedelta(days=20))
    unrated = finished_run(agent, user=member, started_at=today - dt.timedelta(days=1))
    rated(earlier, member, "up")
    rated(earlier, builder, "down")
    rated(latest, member, "down")
    rated(child, member, "up")  # a delegated row: not a top-level run's thumb
    rated(old, member, "down")  # started before the window
    assert unrated.pk

    body = client_for(builder, org).get("/api/v1/stats/usage/?days=7").json()
    daily = body["quality"]["daily"]
    assert [p["date"] for p in daily][0] == (today - dt.timedelta(days=6)).date().isoformat()
    by_day = {p["date"]: (p["up"], p["down"]) for p in daily}
    assert by_day[(today - dt.timedelta(days=2)).date().isoformat()] == (1, 1)
    assert by_day[(today - dt.timedelta(days=1)).date().isoformat()] == (0, 0)
    assert by_day[today.date().isoformat()] == (0, 1)
    assert sum(p["up"] for p in daily) == body["quality"]["up"] == 1
    assert sum(p["down"] for p in daily) == body["quality"]["down"] == 2
    assert body["quality"]["rated_runs"] == 2


def test_the_outcome_donut_divides_its_ring_by_the_counts():
    from apps.spend.charts import outcome_donut_svg

    svg = outcome_donut_svg({"completed": 3, "failed": 1, "<b>": 0})
    lengths = [
        float(part.split('stroke-dasharray="', 1)[1].split(" ", 1)[0])
        for part in svg.split('class="segment"')[1:]
    ]
    assert len(lengths) == 2 and lengths[0] == pytest.approx(3 * lengths[1], rel=1e-3)
    assert "completed 3 of 4, failed 1 of 4" in svg and "<b>" not in svg
    assert outcome_donut_svg({}).count('class="segment"') == 0


def test_the_bar_charts_escape_their_text_scale_to_the_largest_row_and_mark_floors():
    from apps.spend.charts import adoption_svg, providers_svg

    svg = adoption_svg(
        [
            {"agent_id": 1, "agent_name": "<script>", "run_count": 4, "delegated_run_count": 1},
            {"agent_id": 2, "agent_name": "Beta", "run_count": 2, "delegated_run_count": 0},
        ],
        total_runs=5,
    )
    assert "<script>" not in svg and "&lt;script&gt;" in svg
    widths = [
        float(part.split('width="', 1)[1].split('"', 1)[0])
        for part in svg.split('<rect class="bar')[1:]
    ]
    # <script>: 3 own + 1 delegated across the whole 320 units; Beta: half of it.
    assert widths[0] == pytest.approx(240) and widths[1] == pytest.approx(79)
    assert widths[2] == pytest.approx(160)
    assert "add up to 6 beside 5 top-level run(s)" in svg
    floors = providers_svg(
        [
            {"provider": "anthropic", "cost_usd": Decimal("0.9"), "run_count": 2, "partial_run_count": 1},
            {"provider": "openai", "cost_usd": Decimal("0.7"), "run_count": 2, "partial_run_count": 0},
        ]
    )  # fmt: skip
    assert floors.count('class="bar floor"') == 1 and "≥ $0.90" in floors and "$0.70" in floors


def test_the_thumbs_chart_puts_up_above_the_line_and_down_below_it():
    from apps.spend.charts import ratings_daily_svg

    svg = ratings_daily_svg(
        [
            {"date": dt.date(2026, 1, 1), "up": 2, "down": 0},
            {"date": dt.date(2026, 1, 2), "up": 0, "down": 1},
        ]
    )
    axis = float(svg.split('<line x1="36" y1="', 1)[1].split('"', 1)[0])
    up = svg.split('class="bar up"', 1)[1]
    down = svg.split('class="bar down"', 1)[1]
    up_y, up_h = (float(up.split(f'{k}="', 1)[1].split('"', 1)[0]) for k in ("y", "height"))
    down_y = float(down.split('y="', 1)[1].split('"', 1)[0])
    assert up_y + up_h == pytest.approx(axis) and down_y == pytest.approx(axis)
    assert "2 thumbs up above the line, 1 thumbs down below it" in svg
    assert "The most thumbs down in one day: 1 on 2026-01-02" in svg


@pytest.mark.parametrize(
    "ms, text", [(None, "—"), (850, "850 ms"), (4800, "4.8 s"), (125_000, "2 min 5 s")]
)
def test_a_duration_reads_as_people_say_it(ms, text):
    from apps.spend.charts import duration_text

    assert duration_text(ms) == text
