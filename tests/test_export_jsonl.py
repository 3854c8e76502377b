"""`runs/export` and `approvals/export` offer JSON Lines as the audit export does (`?fmt=jsonl`):
the same rows as the CSV, one JSON object per line, recorded with its format."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json

import pytest

from apps.audit.models import AuditEntry
from apps.runs.runner import execute_run
from tests.approvals.factories import ADD_ONE, gated_agent, run_now
from tests.runs.factories import published_agent, queued_run

pytestmark = pytest.mark.django_db


def _window(start: str, end: str) -> dict:
    today = dt.datetime.now(dt.UTC).date().isoformat()
    return {start: today, end: today}


def _csv(response) -> list[dict]:
    assert response.status_code == 200, response.content
    return list(csv.DictReader(io.StringIO(response.content.decode())))


def _jsonl(response) -> list[dict]:
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("application/x-ndjson")
    return [json.loads(line) for line in response.content.decode().splitlines()]


def test_the_runs_export_offers_jsonl_with_the_csvs_rows(org, owner, member, client_for):
    agent = published_agent(org)
    runs = [queued_run(member, org, agent, text) for text in ("one", "two")]
    for run in runs:
        execute_run(run.pk)
    client = client_for(owner, org)
    window = _window("started_from", "started_to")
    as_csv = _csv(client.get("/api/v1/runs/export/", {**window, "fmt": "csv"}))
    as_jsonl = _jsonl(client.get("/api/v1/runs/export/", {**window, "fmt": "jsonl"}))
    assert [row["id"] for row in as_jsonl] == [int(row["id"]) for row in as_csv]
    assert {row["id"] for row in as_jsonl} == {run.pk for run in runs}
    assert all(row["status"] == "completed" for row in as_jsonl)
    # Typed as JSON: numbers stay numbers, a floor stays a boolean.
    assert isinstance(as_jsonl[0]["input_tokens"], int)
    assert as_jsonl[0]["cost_is_partial"] is False
    entry = AuditEntry.objects.filter(action="runs.export").latest("created_at")
    assert entry.details["format"] == "jsonl" and entry.details["row_count"] == 2


def test_the_approvals_export_offers_jsonl_with_the_csvs_rows(org, operator, member, client_for):
    run_now(member, org, gated_agent(org), ADD_ONE)
    client = client_for(operator, org)
    window = _window("created_from", "created_to")
    as_csv = _csv(client.get("/api/v1/approvals/export/", window))
    as_jsonl = _jsonl(client.get("/api/v1/approvals/export/", {**window, "fmt": "jsonl"}))
    assert len(as_jsonl) == len(as_csv) == 1
    assert str(as_jsonl[0]["id"]) == as_csv[0]["id"]
    assert as_jsonl[0]["status"] == "pending"
    entry = AuditEntry.objects.filter(action="approvals.export").latest("created_at")
    assert entry.details["format"] == "jsonl"


def test_a_format_no_export_offers_is_still_a_422_naming_fmt(org, owner, client_for):
    window = _window("started_from", "started_to")
    response = client_for(owner, org).get("/api/v1/runs/export/", {**window, "fmt": "xlsx"})
    assert response.status_code == 422
    assert "csv, jsonl" in response.json()["fmt"][0]
