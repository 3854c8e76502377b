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
