"""GET /api/v1/runs/export/: seed 003's six questions for the run history's download."""

import csv
import datetime as dt
import html
import io
import re
from decimal import Decimal

import pytest

from apps.audit.models import AuditEntry
from apps.runs.exports import runs_export
from apps.runs.models import Run

from .factories import published_agent
from .history import BASE, build_history

pytestmark = pytest.mark.django_db

WINDOW = "started_from=2025-03-01&started_to=2025-03-31"


@pytest.fixture
def history(org, other_org, owner, member, builder, outsider):
    return build_history(org, other_org, [member, builder])


def _rows(response) -> list[dict]:
    assert response.status_code == 200, response.content
    return list(csv.DictReader(io.StringIO(response.content.decode())))


def test_needs_both_ends_of_the_window(org, builder, client_for, history):
    response = client_for(builder, org).get("/api/v1/runs/export/?started_from=2025-03-01")
    assert response.status_code == 422
    assert "both ends of the date range" in response.json()["started_to"][0]
    assert "started_from" not in response.json()


def test_the_gate_is_runs_view_and_the_neighbour_never_leaks(
    org, member, builder, client_for, history
):
    assert client_for(member, org).get(f"/api/v1/runs/export/?{WINDOW}").status_code == 403
    rows = _rows(client_for(builder, org).get(f"/api/v1/runs/export/?{WINDOW}"))
    ids = {int(row["id"]) for row in rows}
    assert history.other_org_run.pk not in ids
    in_window = [
        r
        for r in history.top_level
        if r.started_at and BASE <= r.started_at < dt.datetime(2025, 4, 1, tzinfo=dt.UTC)
    ]
    assert ids == {r.pk for r in in_window}


def test_top_level_by_default_and_parent_run_id_says_which_rows_would_count_twice(
    org, builder, client_for, history
):
    client = client_for(builder, org)
    default = _rows(client.get(f"/api/v1/runs/export/?{WINDOW}"))
    assert all(row["parent_run_id"] == "" for row in default)
    widened = _rows(client.get(f"/api/v1/runs/export/?{WINDOW}&include_delegations=true"))
    delegated = [row for row in widened if row["parent_run_id"]]
    assert delegated and len(widened) == len(default) + len(delegated)


def test_people_are_only_ids_and_partial_cost_is_its_own_column(org, builder, client_for, history):
    rows = _rows(client_for(builder, org).get(f"/api/v1/runs/export/?{WINDOW}"))
    assert "user_id" in rows[0] and not any("email" in column for column in rows[0])
    assert {row["cost_is_partial"] for row in rows} <= {"true", "false"}


def test_a_formula_in_a_label_is_neutralised(org, builder, client_for):
    agent = published_agent(org)
    Run.objects.create(
        organization=org,
        agent=agent,
        agent_version=agent.current_version,
        user=builder,
        surface="api",
        status="completed",
        input="x",
        model_label='=HYPERLINK("http://evil")',
        started_at=BASE,
        ended_at=BASE + dt.timedelta(seconds=1),
        cost_usd=Decimal("0.01"),
    )
    (row,) = _rows(client_for(builder, org).get(f"/api/v1/runs/export/?{WINDOW}"))
    assert row["model_label"].startswith("'=HYPERLINK")


def test_more_than_the_limit_is_refused_with_the_count(
    org, builder, client_for, small_export_row_limit
):
    agent = published_agent(org)
    Run.objects.bulk_create(
        Run(
            organization=org,
            agent=agent,
            agent_version=agent.current_version,
            user=builder,
            surface="api",
            status="completed",
            input="x",
            started_at=BASE + dt.timedelta(seconds=i),
            ended_at=BASE + dt.timedelta(seconds=i + 1),
        )
        for i in range(small_export_row_limit + 1)
    )
    response = client_for(builder, org).get(f"/api/v1/runs/export/?{WINDOW}")
    assert response.status_code == 422
    assert "11 rows match" in response.json()["window"][0]
    assert not AuditEntry.objects.filter(action="runs.export").exists()


def test_the_export_is_audited_with_window_filters_and_row_count(org, builder, client_for, history):
    rows = _rows(client_for(builder, org).get(f"/api/v1/runs/export/?{WINDOW}&status=completed"))
    entry = AuditEntry.objects.get(organization=org, action="runs.export")
    assert entry.actor == builder
    assert entry.details["row_count"] == len(rows)
    assert entry.details["filters"] == {"statuses": ["completed"]}
    assert entry.details["window"]["from"].startswith("2025-03-01")


def test_the_own_floor_overwrites_a_user_id_instead_of_widening_it(org, member, builder, history):
    # No built-in role reaches this (the gate is runs:view); the floor is there for when one does.
    result = runs_export(
        user=member,
        organization=org,
        params={
            "started_from": "2025-03-01",
            "started_to": "2025-03-31",
            "user_id": [str(builder.pk)],
        },
        surface="api",
    )
    rows = list(csv.DictReader(io.StringIO(result.body.decode())))
    assert rows and {row["user_id"] for row in rows} == {str(member.pk)}


def test_activity_downloads_the_filtered_history_and_explains_a_refusal(
    client, org, builder, member, history
):
    client.force_login(builder)
    page = client.get(f"/activity/?{WINDOW}&status=completed").content.decode()
    assert 'id="download-csv"' in page
    response = client.get(f"/activity/download/?{WINDOW}&status=completed")
    rows = _rows(response)
    assert rows and {row["status"] for row in rows} == {"completed"}
    assert AuditEntry.objects.get(action="runs.export").details["surface"] == "console"
    refused = client.get("/activity/download/?status=completed", follow=True)
    assert "Not exported" in refused.content.decode()
    client.force_login(member)
    assert client.get(f"/activity/download/?{WINDOW}").status_code == 403


def test_activity_download_without_dates_exports_what_the_page_shows_on_first_click(
    client, org, builder, history
):
    client.force_login(builder)
    page = client.get("/activity/?status=completed").content.decode()
    href = html.unescape(re.search(r'href="([^"]+)" id="download-csv"', page).group(1))
    assert "started_from=" in href and "started_to=" in href
    rows = _rows(client.get(href))
    shown = Run.objects.filter(organization=org, status="completed", parent_run__isnull=True)
    assert len(rows) == shown.count() > 0
