"""Activity (issue 15): the status filter as checkboxes, errors in the person's words, a run's
detail as a trace that names each tool, approval arguments as JSON."""

import pytest

from apps.approvals.models import ToolApproval
from apps.approvals.services import approval_decide
from apps.runs.resume import run_resume
from tests.approvals.factories import ADD_ONE, gated_agent, run_now

pytestmark = pytest.mark.django_db


def test_the_status_filter_is_checkboxes_that_keep_their_choice(client, owner):
    client.force_login(owner)
    page = client.get("/activity/?status=failed&status=completed").content.decode()
    assert '<input type="checkbox" name="status" value="failed" checked>' in page
    assert '<input type="checkbox" name="status" value="completed" checked>' in page
    assert '<input type="checkbox" name="status" value="queued">' in page
    assert '<select name="status"' not in page


def test_a_bad_filter_is_said_in_the_persons_words(client, owner):
    client.force_login(owner)
    page = client.get("/activity/?took_over_ms=abc").content.decode()
    errors = page.split('id="filter-errors"', 1)[1].split("</ul>", 1)[0]
    # The field by its label, the sentence from the one parsing layer (agenticos/params.py).
    assert "Took over (ms): must be a whole number" in errors
    assert "took_over_ms" not in errors and "is not an id" not in errors


def test_a_runs_detail_traces_its_tools_in_order_with_the_decision(client, org, owner):
    run = run_now(owner, org, gated_agent(org, name="Gated"), ADD_ONE, surface="chat")
    approval_decide(actor=owner, approval=ToolApproval.objects.get(run=run), decision="approve")
    run_resume(run_id=run.pk)
    client.force_login(owner)
    page = client.get(f"/activity/?run={run.pk}").content.decode()
    trace = page.split('id="run-trace"', 1)[1].split("</ol>", 1)[0]
    call, approval, result = (
        trace.index("Tool call</span> <code>add_task"),
        trace.index("Approved by"),
        trace.index("Result</span> <code>add_task"),
    )
    assert call < approval < result < trace.index("Answer</span>")
    steps = page.split('class="steps"', 1)[1].split("</ol>", 1)[0]
    assert "<code>add_task</code>" in steps
    assert "Tool call — 0 in / 0 out" not in steps and "awaiting_approval" not in steps
    # A timeline: each model request with when it was booked in the run, drawn as a meter.
    assert steps.count('<span class="step-at">+') == 2 and "<meter" in steps


def test_approval_arguments_read_as_json_in_the_queue(client, org, owner):
    run_now(owner, org, gated_agent(org, name="Gated"), ADD_ONE, surface="chat")
    client.force_login(owner)
    page = client.get("/activity/?tab=approvals").content.decode()
    assert "{\n  &quot;content&quot;: &quot;Email the customer&quot;\n}" in page
    assert "{&#x27;content&#x27;" not in page


def test_a_period_from_the_dashboard_is_shown_kept_and_resolved_for_the_download(client, owner):
    from apps.spend.filters import last_days

    client.force_login(owner)
    page = client.get("/activity/?surface=slack&period=30d").content.decode()
    since = last_days(30).since.date().isoformat()
    assert f"started since {since} (UTC), the last 30 days" in page
    assert '<option value="30d" selected>Last 30 days</option>' in page
    # "All runs" and "Slow runs" keep the window; the CSV link names it as dates (an export
    # takes both ends), never as the period.
    assert 'id="view-all"' in page and 'href="?period=30d"' in page
    assert 'href="?period=30d&amp;view=slow"' in page
    download = page.split('id="download-csv"', 1)[0].rsplit('href="', 1)[1]
    assert f"started_from={since}" in download and "period" not in download
    # A period a link names that the form does not offer is added to its choices.
    assert (
        '<option value="14d" selected>Last 14 days</option>'
        in client.get("/activity/?period=14d").content.decode()
    )


@pytest.mark.parametrize(
    "url, sentence",
    [
        ("/activity/?period=month", "Period: must be a number of days written like 30d"),
        (
            "/activity/?period=30d&started_from=2025-01-01",
            "Period: give either a period or started_from/started_to, not both",
        ),
    ],
)
def test_a_bad_period_is_a_clear_message_not_an_empty_page(client, owner, url, sentence):
    client.force_login(owner)
    response = client.get(url)
    assert response.status_code == 200
    errors = response.content.decode().split('id="filter-errors"', 1)[1].split("</ul>", 1)[0]
    assert sentence in errors
