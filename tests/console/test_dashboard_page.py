"""The Dashboard says what needs attention (issue 15): calls waiting for a decision, the latest
runs that ended badly, and the agents' month — not only the budget meter."""

from decimal import Decimal

import pytest

from apps.runs.models import Run
from tests.approvals.factories import ADD_ONE, gated_agent, run_now
from tests.runs.factories import published_agent

pytestmark = pytest.mark.django_db


def test_the_dashboard_shows_waiting_calls_failed_runs_and_the_agents_month(client, org, owner):
    run_now(owner, org, gated_agent(org, name="Gated"), ADD_ONE, surface="chat")
    helper = published_agent(org, name="Helper")
    failed = run_now(owner, org, helper, "hello", surface="chat")
    Run.objects.filter(pk=failed.pk).update(status="failed", error="The provider refused.")
    client.force_login(owner)
    page = client.get("/").content.decode()
    approvals = page.split('id="attention-approvals"', 1)[1].split("</div>", 1)[0]
    assert '<p class="stat">1</p>' in approvals and "?tab=approvals" in approvals
    bad = page.split('id="attention-failed"', 1)[1].split("</div>", 1)[0]
    assert f"?run={failed.pk}" in bad and "Failed" in bad
    agents = page.split('id="dashboard-agents"', 1)[1].split("</table>", 1)[0]
    assert "Helper" in agents and "Gated" in agents


def test_a_member_sees_no_approvals_card_and_only_their_runs(client, org, owner, member):
    helper = published_agent(org, name="Helper")
    theirs = run_now(owner, org, helper, "hello", surface="chat")
    Run.objects.filter(pk=theirs.pk).update(status="failed")
    client.force_login(member)
    page = client.get("/").content.decode()
    assert 'id="attention-approvals"' not in page
    assert f"?run={theirs.pk}" not in page


def test_offline_money_is_labelled_simulated_on_the_dashboard_and_the_spend_page(
    client, org, owner
):
    run_now(owner, org, published_agent(org, name="Helper"), "hello", surface="chat")
    client.force_login(owner)
    assert 'id="dashboard-simulated"' in client.get("/").content.decode()
    assert 'id="spend-simulated"' in client.get("/spend/").content.decode()


def test_one_money_format_cents_on_totals_and_a_sub_cent_amount_never_reads_as_free():
    from apps.console.templatetags.console import money
    from apps.spend.charts import usd

    assert money("1234.5") == "$1,234.50" == usd(Decimal("1234.5"))
    assert money("0.003") == "$0.0030" == usd(Decimal("0.003"))
    assert money("0") == "$0.00"
    assert money("0.000123", 6) == "$0.000123"  # a per-request cost asks for its digits
    assert money(None) == "—"
