"""The console's Spend page, its download, the nav link and the Dashboard's cap card."""

import datetime as dt
from decimal import Decimal
from urllib.parse import parse_qs, urlparse

import pytest
from django.test import Client
from django.utils import timezone

from apps.audit.models import AuditEntry
from apps.runs.models import Run
from apps.spend.models import LedgerEntry
from apps.spend.services import month_of
from tests.runs.factories import book_spend, published_agent

from .builders import finished_run

pytestmark = pytest.mark.django_db


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def spent(org, other_org, member, outsider):
    helper = published_agent(org, name="Helper", budget={"monthly_usd": "5.00"})
    exact = finished_run(helper, user=member)
    book_spend(exact, Decimal("1.00"))
    Run.objects.filter(pk=exact.pk).update(cost_usd=exact.ledger.cost_usd)
    finished_run(helper, cost="0.25", user=member, partial=True)
    finished_run(published_agent(other_org, name="Theirs"), cost="9.00", user=outsider)
    return helper


def test_the_page_needs_runs_view_and_the_nav_link_follows_it(org, member, builder, spent):
    assert _client(member).get("/spend/").status_code == 403
    assert 'href="/spend/"' not in _client(member).get("/").content.decode()
    page = _client(builder).get("/spend/")
    assert page.status_code == 200
    assert 'href="/spend/"' in page.content.decode()


def test_a_floor_reads_at_least_with_a_tooltip_saying_how_many_runs(org, builder, spent):
    html = _client(builder).get("/spend/?days=7").content.decode()
    assert "at least $1.25" in html
    assert 'title="1 of 2 runs could not be fully priced' in html
    assert "$5.00" in html  # the published cap beside the agent's month


def test_the_daily_chart_is_inline_svg_with_a_title_and_a_description(org, builder, spent):
    html = _client(builder).get("/spend/?days=7").content.decode()
    assert '<svg class="spend-chart"' in html and 'role="img"' in html
    assert "<desc" in html and "7 days from" in html
    assert 'class="bar floor"' in html  # today's bar holds the unpriced run


def test_the_download_link_carries_the_window_and_the_file_is_audited_from_the_console(
    org, builder, spent
):
    client = _client(builder)
    html = client.get("/spend/?days=7").content.decode()
    start = html.index('id="spend-export" href="') + len('id="spend-export" href="')
    link = html[start : html.index('"', start)].replace("&amp;", "&")
    query = parse_qs(urlparse(link).query)
    assert set(query) == {"from", "to"}
    response = client.get(link)
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    assert "Helper" in response.content.decode() and "Theirs" not in response.content.decode()
    assert AuditEntry.objects.get(action="spend.export").details["surface"] == "console"


def test_a_download_without_a_window_is_refused_back_to_the_page(org, builder, spent):
    response = _client(builder).get("/spend/export/?days=7")
    assert response.status_code == 302 and response["Location"].startswith("/spend/")
    assert not AuditEntry.objects.filter(action="spend.export").exists()


def test_a_bad_window_falls_back_to_the_default_and_says_so(org, builder, spent):
    response = _client(builder).get("/spend/?days=zero", follow=True)
    html = response.content.decode()
    assert response.status_code == 200 and "Window ignored" in html and "last 30 days" in html


def test_a_neighbour_sees_only_its_own_spend(other_org, outsider, spent):
    html = _client(outsider).get("/spend/").content.decode()
    assert "Theirs" in html and "Helper" not in html


def test_the_dashboard_shows_the_month_against_the_cap_and_the_chart(org, builder, member, spent):
    org.monthly_budget_usd = Decimal("10.00")
    org.save(update_fields=["monthly_budget_usd"])
    html = _client(builder).get("/").content.decode()
    assert 'id="dashboard-spend"' in html
    assert "of the $10.00 organization cap" in html and "10% used" in html
    assert '<svg class="spend-chart"' in html
    # Without runs:view the card is absent, not refused.
    assert 'id="dashboard-spend"' not in _client(member).get("/").content.decode()


def test_an_unpriced_charge_this_month_marks_the_dashboards_month_as_a_floor(org, builder, member):
    agent = published_agent(org)
    finished_run(agent, user=member, started_at=timezone.now() - dt.timedelta(minutes=1))
    # An unknown model is booked at $0 with priced=False: the month is a floor, not free.
    LedgerEntry.objects.create(
        organization=org, agent=agent, month=month_of(), priced=False, model_name="mystery"
    )
    html = _client(builder).get("/").content.decode()
    assert "≥ $0.00" in html


def test_the_margin_card_shows_caps_approaching_before_the_wall(org, builder, member, spent):
    # Helper: $1.00 of a $5.00 cap (20%) — below its warnings. The organization: $1.00 of $1.20.
    org.monthly_budget_usd = Decimal("1.20")
    org.save(update_fields=["monthly_budget_usd"])
    html = _client(builder).get("/").content.decode()
    assert 'id="dashboard-caps-approaching"' in html
    assert "Acme (organization)" in html and "83% used, past its 80% warning" in html
    assert "Helper</a>:" not in html
    # The agent's own thresholds are its spec's: at 20% it warns when it asks to at 15%.
    version = spent.current_version
    version.spec = {
        **version.spec,
        "alerts": {"budget": {"audience": ["admins"], "warn_at": ["0.15"]}},
    }
    version.save(update_fields=["spec"])
    html = _client(builder).get("/").content.decode()
    assert "Helper</a>:" in html and "20% used, past its 15% warning" in html
    org.monthly_budget_usd = Decimal("100")
    org.save(update_fields=["monthly_budget_usd"])
    assert "Acme (organization)" not in _client(builder).get("/").content.decode()
