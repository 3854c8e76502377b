"""Through a real Celery worker: a decision resumes the run as a task, through prepare()."""

import pytest

from apps.approvals.models import ToolApproval
from apps.runs.models import Run

from .conftest import wait_for
from .factories import ADD_ONE, gated_agent


@pytest.mark.django_db(transaction=True)
def test_an_approval_resumes_the_run_on_the_worker_and_it_finishes(
    celery_worker, org, member, operator, client_for
):
    agent = gated_agent(org)
    run_id = (
        client_for(member, org)
        .post("/api/v1/runs/", {"agent_id": agent.pk, "input": ADD_ONE}, format="json")
        .json()["id"]
    )
    run = wait_for(run_id, statuses={"awaiting_approval", "completed", "failed"})
    assert run.status == "awaiting_approval", run.error
    approval = ToolApproval.objects.get(run=run)

    response = client_for(operator, org).post(
        f"/api/v1/approvals/{approval.pk}/decide/", {"decision": "approve"}, format="json"
    )

    assert response.status_code == 200
    done = wait_for(run_id)
    assert done.status == "completed", done.error
    assert "Email the customer" in done.output
    assert Run.objects.get(pk=run_id).started_at == run.started_at
