"""GET /api/v1/spend/, /spend/export/ and /stats/usage/: the gate, tenancy, the window's 422s,
floors, and the export's rules (seed 003, "Exportar a CSV")."""

import csv
import datetime as dt
import io
from decimal import Decimal

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from apps.agents.models import Agent, AgentVersion
from apps.audit.models import AuditEntry
from apps.runs.models import Run
from apps.spend.exports import SPEND_EXPORT_COLUMNS
from tests.runs.factories import book_spend, published_agent

from .builders import finished_run

pytestmark = pytest.mark.django_db

TODAY = timezone.now().astimezone(dt.UTC).date()
EXPORT_WINDOW = f"from={TODAY - dt.timedelta(days=6)}&to={TODAY}"


@pytest.fixture
def spent(org, other_org, member, builder, outsider):
    """Acme: a helper with one exact and one unpriced run, a delegation under the first; Globex: one run."""
    helper = published_agent(org, name="Helper", budget={"monthly_usd": "5.00"})
    researcher = published_agent(org, name="Researcher")
    parent = finished_run(helper, cost="1.00", user=member, provider="openai")
    book_spend(parent, Decimal("1.00"))
    # As the runner's finally block leaves it: the row holds what its ledger booked ($1.000005).
    Run.objects.filter(pk=parent.pk).update(cost_usd=parent.ledger.cost_usd)
    finished_run(researcher, cost="0.40", parent=parent, provider="anthropic")
    finished_run(helper, cost="0", user=builder, partial=True, provider="openai")
    theirs = finished_run(published_agent(other_org, name="Theirs"), cost="9.00", user=outsider)
    return {"helper": helper, "researcher": researcher, "theirs": theirs}


def _session(user, organization):
    client = APIClient()
    client.force_login(user)
    client.credentials(HTTP_X_ORGANIZATION_ID=str(organization.pk))
    return client


def _cents(value) -> Decimal:
    return Decimal(value).quantize(Decimal("0.01"))


def _csv(response) -> list[dict]:
    assert response.status_code == 200, response.content
    return list(csv.DictReader(io.StringIO(response.content.decode())))


# --- GET /spend/ ------------------------------------------------------------------------------


def test_spend_needs_runs_view(org, member, viewer, client_for, spent):
    assert client_for(member, org).get("/api/v1/spend/").status_code == 403
    assert client_for(viewer, org).get("/api/v1/spend/").status_code == 403


def test_spend_answers_the_per_agent_rows_and_the_three_breakdowns(org, builder, client_for, spent):
    body = client_for(builder, org).get("/api/v1/spend/?days=7").json()
    assert body["period_days"] == 7
    helper = next(row for row in body["by_agent"] if row["agent_name"] == "Helper")
    assert set(helper) >= {
        "agent_id",
        "cost_usd",
        "month_to_date_usd",
        "monthly_cap_usd",
        "run_count",
        "partial_run_count",
    }
    assert (_cents(helper["cost_usd"]), helper["run_count"], helper["partial_run_count"]) == (
        Decimal("1.00"),
        2,
        1,
    )
    assert Decimal(helper["monthly_cap_usd"]) == Decimal("5.00")
    assert Decimal(helper["month_to_date_usd"]) >= Decimal("1.00")
    providers = {row["provider"]: _cents(row["cost_usd"]) for row in body["by_provider"]}
    assert providers == {"openai": Decimal("0.60"), "anthropic": Decimal("0.40")}
    assert {row["email"] for row in body["by_user"]} == {"member@acme.test", "builder@acme.test"}
    assert body["by_key"] and len(body["daily"]) == 7
    # The floor is counted where the total is printed: 1 of 2 runs could not be priced.
    assert (body["total"]["run_count"], body["total"]["partial_run_count"]) == (2, 1)


def test_another_organizations_spend_is_never_read(
    org, other_org, builder, outsider, client_for, spent
):
    theirs = client_for(outsider, other_org).get("/api/v1/spend/").json()
    assert [row["agent_name"] for row in theirs["by_agent"]] == ["Theirs"]
    ours = client_for(builder, org).get("/api/v1/spend/").json()
    assert "Theirs" not in {row["agent_name"] for row in ours["by_agent"]}
    assert _cents(ours["total"]["cost_usd"]) == Decimal("1.00")
    # A session naming an organization it is not a member of reads it as absent.
    assert _session(builder, other_org).get("/api/v1/spend/").status_code == 404


def test_from_wins_over_days_and_period_days_is_null(org, builder, client_for, spent):
    body = (
        client_for(builder, org).get("/api/v1/spend/?days=7&from=2020-01-01&to=2020-01-31").json()
    )
    assert body["period_days"] is None and body["since"].startswith("2020-01-01")
    assert body["total"]["run_count"] == 0 and len(body["daily"]) == 31
    # The month to date ignores the window.
    assert Decimal(body["organization"]["month_to_date_usd"]) >= Decimal("1.00")


@pytest.mark.parametrize(
    "query, field",
    [
        ("days=abc", "days"),
        ("days=0", "days"),
        ("from=tomorrowish", "from"),
        ("to=2025-01-01", "from"),
        ("from=2025-02-01&to=2025-01-01", "to"),
    ],
)
def test_a_bad_window_is_a_422_naming_the_field(org, builder, client_for, query, field):
    response = client_for(builder, org).get(f"/api/v1/spend/?{query}")
    assert response.status_code == 422 and field in response.json()


# --- GET /spend/export/ -----------------------------------------------------------------------


def test_export_needs_runs_view(org, member, client_for, spent):
    assert client_for(member, org).get(f"/api/v1/spend/export/?{EXPORT_WINDOW}").status_code == 403


def test_export_carries_only_the_windows_figures(org, builder, client_for, spent):
    response = client_for(builder, org).get(f"/api/v1/spend/export/?{EXPORT_WINDOW}")
    rows = _csv(response)
    assert tuple(rows[0]) == SPEND_EXPORT_COLUMNS
    assert not {"month_to_date_usd", "monthly_cap_usd"} & set(rows[0])
    helper = next(row for row in rows if row["agent_name"] == "Helper")
    assert (_cents(helper["cost_usd"]), helper["run_count"], helper["partial_run_count"]) == (
        Decimal("1.00"),
        "2",
        "1",
    )
    # Top-level runs only: the delegate-only researcher is not a row, so cost_usd sums to the bill.
    assert [row["agent_name"] for row in rows] == ["Helper"]
    assert response["Content-Disposition"].startswith('attachment; filename="spend-')


def test_export_never_reaches_a_neighbours_rows(
    org, other_org, builder, outsider, client_for, spent
):
    rows = _csv(client_for(outsider, other_org).get(f"/api/v1/spend/export/?{EXPORT_WINDOW}"))
    assert [row["agent_name"] for row in rows] == ["Theirs"]
    assert (
        _session(builder, other_org).get(f"/api/v1/spend/export/?{EXPORT_WINDOW}").status_code
        == 404
    )


@pytest.mark.parametrize(
    "query, missing", [(f"from={TODAY}", ["to"]), ("days=7", ["from", "to"]), ("", ["from", "to"])]
)
def test_export_needs_both_ends_of_the_window(org, builder, client_for, spent, query, missing):
    response = client_for(builder, org).get(f"/api/v1/spend/export/?{query}")
    assert response.status_code == 422
    body = response.json()
    assert sorted(body) == missing
    assert all("both ends of the date range" in body[key][0] for key in missing)


def test_export_is_audited_with_its_window_and_row_count(org, builder, client_for, spent):
    _csv(client_for(builder, org).get(f"/api/v1/spend/export/?{EXPORT_WINDOW}"))
    entry = AuditEntry.objects.get(organization=org, action="spend.export")
    assert entry.actor_id == builder.pk
    assert entry.details["row_count"] == 1
    assert entry.details["window"]["from"].startswith(str(TODAY - dt.timedelta(days=6)))
    assert entry.details["surface"] == "api"


def test_more_than_the_limit_is_refused_with_the_count(
    org, builder, client_for, small_export_row_limit
):
    agents = Agent.objects.bulk_create(
        Agent(organization=org, name=f"Agent {i:05}") for i in range(small_export_row_limit + 1)
    )
    versions = AgentVersion.objects.bulk_create(
        AgentVersion(agent=agent, number=1, spec={}) for agent in agents
    )
    now = timezone.now()
    Run.objects.bulk_create(
        Run(
            organization=org,
            agent=agent,
            agent_version=version,
            status="completed",
            input="x",
            started_at=now,
        )
        for agent, version in zip(agents, versions, strict=True)
    )
    response = client_for(builder, org).get(f"/api/v1/spend/export/?{EXPORT_WINDOW}")
    assert response.status_code == 422
    assert "11 rows match" in response.json()["window"][0]
    assert not AuditEntry.objects.filter(action="spend.export").exists()


# --- GET /stats/usage/ --------------------------------------------------------------------------


def test_usage_for_the_organization_needs_runs_view_and_own_is_anyones(
    org, member, builder, client_for, spent
):
    assert client_for(member, org).get("/api/v1/stats/usage/").status_code == 403
    own = client_for(member, org).get("/api/v1/stats/usage/?scope=own&days=7").json()
    assert own["total_runs"] == 1 and _cents(own["cost"]["cost_usd"]) == Decimal("1.00")
    whole = client_for(builder, org).get("/api/v1/stats/usage/?days=7").json()
    assert whole["scope"] == "org" and whole["total_runs"] == 2
    assert len(whole["daily"]) == 7 and sum(point["runs"] for point in whole["daily"]) == 2
    assert set(whole["cost"]) >= {"cost_usd", "model_usd", "ingestion_usd", "partial_run_count"}
    assert whole["cost"]["partial_run_count"] == 1


def test_usage_never_reads_a_neighbour(org, other_org, builder, outsider, client_for, spent):
    theirs = client_for(outsider, other_org).get("/api/v1/stats/usage/").json()
    assert theirs["total_runs"] == 1 and Decimal(theirs["cost"]["cost_usd"]) == Decimal("9.00")
    assert _session(builder, other_org).get("/api/v1/stats/usage/").status_code == 404


@pytest.mark.parametrize(
    "query, field", [("scope=everyone", "scope"), ("days=-3", "days"), ("from=03/01/2025", "from")]
)
def test_usage_refuses_a_bad_value_with_a_422(org, builder, client_for, query, field):
    response = client_for(builder, org).get(f"/api/v1/stats/usage/?{query}")
    assert response.status_code == 422 and field in response.json()
