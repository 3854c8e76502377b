"""GET /api/v1/audit/export/ and the exporter every table shares (seed 003, "Exportar a CSV")."""

import csv
import html
import io
import json
import re
from datetime import timedelta

import pytest
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.utils import timezone

from apps.audit.chain import GENESIS_HASH
from apps.audit.exports import EXPORT_ROW_LIMIT, csv_cell
from apps.audit.models import AuditEntry
from apps.audit.selectors import AUDIT_READ_FIELDS
from apps.audit.services import record_audit

pytestmark = pytest.mark.django_db

TODAY = timezone.now().date()
WINDOW = {"created_from": (TODAY - timedelta(days=1)).isoformat(), "created_to": TODAY.isoformat()}


@pytest.fixture
def trail(org, other_org, owner, outsider):
    record_audit(
        actor=owner,
        organization=org,
        action="agent.renamed",
        subject=("agents.Agent", 1, '=HYPERLINK("http://evil")'),
        details={"to": "+1 sales bot", "nested": {"ok": True}},
    )
    record_audit(actor=owner, organization=org, action="org.renamed", subject=org)
    record_audit(actor=outsider, organization=other_org, action="org.renamed", subject=other_org)


def export_entries(organization):
    return AuditEntry.objects.filter(organization=organization, action="audit.export")


def test_csv_has_the_read_model_columns_json_details_and_no_formulas(client_for, org, owner, trail):
    client = client_for(owner, org)

    response = client.get("/api/v1/audit/export/", {**WINDOW, "action": "agent.renamed"})

    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/csv")
    assert "attachment;" in response["Content-Disposition"]
    rows = list(csv.reader(io.StringIO(response.content.decode())))
    assert tuple(rows[0]) == AUDIT_READ_FIELDS and len(rows) == 2
    record = dict(zip(rows[0], rows[1], strict=True))
    assert record["subject_label"] == '\'=HYPERLINK("http://evil")'
    assert json.loads(record["details"]) == {"nested": {"ok": True}, "to": "+1 sales bot"}
    assert "ip_address" not in record


def test_jsonl_keeps_details_nested_and_describes_the_same_entries(client_for, org, owner, trail):
    client = client_for(owner, org)

    response = client.get(
        "/api/v1/audit/export/", {**WINDOW, "fmt": "jsonl", "action": "agent.renamed"}
    )

    assert response.status_code == 200
    lines = [json.loads(line) for line in response.content.decode().splitlines()]
    assert len(lines) == 1 and tuple(lines[0]) == AUDIT_READ_FIELDS
    assert lines[0]["details"] == {"to": "+1 sales bot", "nested": {"ok": True}}
    assert (
        lines[0]["subject_label"] == '=HYPERLINK("http://evil")'
    )  # verbatim: JSONL is not a spreadsheet
    api_row = client.get(f"/api/v1/audit/{lines[0]['id']}/").json()
    assert api_row == lines[0]


@pytest.mark.django_db(transaction=True)
def test_the_export_is_recorded_with_window_filters_format_and_row_count(
    client_for, org, owner, trail
):
    response = client_for(owner, org).get(
        "/api/v1/audit/export/", {**WINDOW, "fmt": "jsonl", "action": "org.renamed"}
    )

    assert response.status_code == 200
    entry = export_entries(org).get()  # committed: this test runs outside any transaction
    assert entry.actor_id == owner.pk
    assert entry.details["filters"] == {"action": ["org.renamed"]}
    assert entry.details["format"] == "jsonl"
    assert entry.details["row_count"] == 1 == len(response.content.splitlines())
    assert entry.details["window"]["from"].startswith(WINDOW["created_from"])
    assert entry.details["window"]["to"].startswith(WINDOW["created_to"] + "T23:59:59.999999")


def test_rows_of_another_organization_never_reach_the_file(client_for, org, owner, trail):
    body = client_for(owner, org).get("/api/v1/audit/export/", WINDOW).content.decode()
    assert "Globex" not in body
    assert {row["organization_id"] for row in csv.DictReader(io.StringIO(body))} == {str(org.pk)}


@pytest.mark.parametrize("missing", ["created_from", "created_to"])
def test_both_ends_of_the_range_are_required(client_for, org, owner, trail, missing):
    params = {key: value for key, value in WINDOW.items() if key != missing}
    response = client_for(owner, org).get("/api/v1/audit/export/", params)
    assert response.status_code == 422
    assert "both ends of the date range" in json.dumps(response.json())
    assert not export_entries(org).exists()


@pytest.mark.parametrize(
    ("path", "keys"),
    [
        ("/api/v1/audit/export/", ["created_from", "created_to"]),
        ("/api/v1/approvals/export/", ["created_from", "created_to"]),
        ("/api/v1/runs/export/", ["started_from", "started_to"]),
    ],
)
def test_a_refused_window_names_the_parameters_the_export_takes(client_for, org, owner, path, keys):
    response = client_for(owner, org).get(path)
    assert response.status_code == 422
    body = json.dumps(response.json())
    for key in keys:
        assert key in body
    assert '"from"' not in body and '"to"' not in body


def test_an_unknown_format_is_refused(client_for, org, owner):
    response = client_for(owner, org).get("/api/v1/audit/export/", {**WINDOW, "fmt": "xlsx"})
    assert response.status_code == 422 and "fmt" in response.json()


def test_the_export_needs_audit_read(client_for, org, member):
    assert client_for(member, org).get("/api/v1/audit/export/", WINDOW).status_code == 403


def test_the_export_limit_is_ten_thousand_rows():
    assert EXPORT_ROW_LIMIT == 10_000


def test_more_than_the_limit_is_refused_naming_the_count(
    client_for, org, owner, small_export_row_limit
):
    now = timezone.now()
    AuditEntry.objects.bulk_create(
        AuditEntry(
            chain=f"bulk:{org.pk}",
            sequence=n,
            created_at=now,
            organization_id=org.pk,
            action="bulk.row",
            subject_type="test",
            subject_id=str(n),
            prev_hash=GENESIS_HASH,
            entry_hash=GENESIS_HASH,
        )
        for n in range(1, small_export_row_limit + 2)
    )
    client = client_for(owner, org)  # its own api_key.created entry makes it 12

    response = client.get("/api/v1/audit/export/", WINDOW)

    assert response.status_code == 422
    message = json.dumps(response.json())
    assert (
        "12 rows match" in message
        and f"limited to {small_export_row_limit} rows" in message
        and "Narrow the date range" in message
    )
    assert not export_entries(org).exists()


def test_formula_cells_are_neutralised_but_numbers_are_not():
    assert [
        csv_cell(value)
        for value in ("=1+2", "+cmd", "-2", "@SUM(A1)", "\tx", "plain", -2, 1.5, None, True)
    ] == [
        "'=1+2",
        "'+cmd",
        "'-2",
        "'@SUM(A1)",
        "'\tx",
        "plain",
        "-2",
        "1.5",
        "",
        "true",
    ]


def test_the_admin_export_action_uses_the_same_exporter_and_is_audited(
    client, app_admin, org, trail
):
    client.force_login(app_admin)
    selected = list(AuditEntry.objects.filter(organization=org).values_list("pk", flat=True))

    response = client.post(
        "/admin/audit/auditentry/",
        {"action": "export_audit_jsonl", ACTION_CHECKBOX_NAME: selected, "index": 0},
    )

    assert response.status_code == 200, response.content[:500]
    assert len(response.content.splitlines()) == len(selected)
    entry = export_entries(org).get()
    assert (entry.actor_id, entry.details["surface"], entry.details["row_count"]) == (
        app_admin.pk,
        "admin",
        len(selected),
    )


def test_the_admin_cannot_change_or_delete_entries(client, app_admin, org, trail):
    client.force_login(app_admin)
    entry = AuditEntry.objects.filter(organization=org).first()
    page = client.get(f"/admin/audit/auditentry/{entry.pk}/change/")
    assert page.status_code == 200 and b"Save" not in page.content
    assert client.post(f"/admin/audit/auditentry/{entry.pk}/delete/").status_code == 403


def test_the_audit_pages_download_without_dates_exports_what_the_page_shows(
    client, org, owner, trail
):
    client.force_login(owner)
    page = client.get(f"/audit/?org={org.pk}").content.decode()
    href = html.unescape(re.search(r'href="([^"]+)" id="download-audit-csv"', page).group(1))
    assert "created_from=" in href and "created_to=" in href
    response = client.get(href)
    assert response.status_code == 200, response.content
    assert (
        int(response["X-Row-Count"])
        == AuditEntry.objects.filter(organization=org).exclude(action="audit.export").count()
    )
