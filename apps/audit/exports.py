"""The exporter every CSV/JSONL download goes through: runs, approvals, spend and audit.

Seed 003 ("Exportar a CSV") asks six questions of an export; this module answers the ones that
are the same for every table, so each app only supplies its scoped, filtered queryset and its
read model (an `ExportTable`):

- Size: both ends of the date range are required, and more than EXPORT_ROW_LIMIT matching rows
  is refused with a message naming the count — never truncated, because a spreadsheet sums
  whatever reaches it.
- Audit: one entry (``<table>.export``) naming the window, the filters, the format and the row
  count — never the request body — committed *before* the response leaves. The cap is what
  makes that possible: the body is built in one pass in memory, then the entry commits, then
  the bytes go out, instead of streaming over an open connection whose reader may vanish.
- Spreadsheet formula injection: a CSV cell that begins with ``= + - @`` or a tab/CR is
  prefixed with an apostrophe, so a label like ``=HYPERLINK(...)`` is shown, not evaluated.
  JSONL is left verbatim: it is read by log pipelines, not spreadsheets.

Tenancy, the permission gate and the OWN floor stay with the caller (its selector), because
they differ per table.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from django.core.exceptions import ValidationError
from django.core.serializers.json import DjangoJSONEncoder
from django.db import transaction
from django.db.models import QuerySet
from django.http import HttpResponse, QueryDict
from django.utils import timezone

from .selectors import (
    AUDIT_READ_FIELDS,
    Window,
    audit_entries_visible_to,
    audit_entry_row,
    parse_audit_filters,
)
from .services import record_audit

EXPORT_ROW_LIMIT = 10_000
FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")
CONTENT_TYPES = {"csv": "text/csv; charset=utf-8", "jsonl": "application/x-ndjson; charset=utf-8"}


@dataclass(frozen=True)
class ExportTable:
    """What one table contributes to the exporter.

    ``name`` makes the audit action (``audit`` → ``audit.export``) and the file name;
    ``columns`` are the read model's fields in file order; ``rows`` turns a list of model
    instances into read-model dicts (the same function the table's list API uses);
    ``date_field`` is what the window bounds; ``ordering`` makes the file deterministic.
    """

    name: str
    columns: Sequence[str]
    rows: Callable[[list], list[dict[str, Any]]]
    date_field: str
    ordering: Sequence[str]
    formats: Sequence[str] = ("csv",)


class ExportRefused(ValidationError):
    """The request cannot be exported as asked; the message says why (a 422 in the API)."""


class ExportTooLarge(ExportRefused):
    """More rows match than an export may carry; ``count`` is how many."""

    def __init__(self, count: int):
        self.count = count
        super().__init__(
            {
                "window": [
                    f"{count:,} rows match; an export is limited to {EXPORT_ROW_LIMIT:,} rows. "
                    "Narrow the date range (or the filters) and export again."
                ]
            }
        )


def neutralise_cell(value: str) -> str:
    """An apostrophe before a cell a spreadsheet would evaluate as a formula."""
    if value and value.startswith(FORMULA_PREFIXES):
        return "'" + value
    return value


def csv_cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float | Decimal):
        return str(value)
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, dict | list):
        # Seed 003: details flattened to a JSON string in the CSV cell.
        return neutralise_cell(
            json.dumps(value, cls=DjangoJSONEncoder, sort_keys=True, ensure_ascii=False)
        )
    return neutralise_cell(str(value))


def render_csv(columns: Sequence[str], rows: list[dict[str, Any]]) -> bytes:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\r\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow([csv_cell(row.get(column)) for column in columns])
    return buffer.getvalue().encode("utf-8")


def render_jsonl(columns: Sequence[str], rows: list[dict[str, Any]]) -> bytes:
    lines = [
        json.dumps(
            {column: row.get(column) for column in columns},
            cls=DjangoJSONEncoder,
            ensure_ascii=False,
        )
        for row in rows
    ]
    return ("\n".join(lines) + ("\n" if lines else "")).encode("utf-8")


RENDERERS = {"csv": render_csv, "jsonl": render_jsonl}


@dataclass(frozen=True)
class ExportResult:
    body: bytes
    fmt: str
    filename: str
    row_count: int

    def response(self) -> HttpResponse:
        response = HttpResponse(self.body, content_type=CONTENT_TYPES[self.fmt])
        response["Content-Disposition"] = f'attachment; filename="{self.filename}"'
        response["X-Row-Count"] = str(self.row_count)
        return response


def _check_request(table: ExportTable, window: Window, fmt: str) -> None:
    if fmt not in table.formats:
        offered = ", ".join(table.formats)
        raise ExportRefused(
            {"fmt": [f"the {table.name} export is offered as {offered}, not {fmt!r}"]}
        )
    if not window.complete:
        from_key, to_key = window.keys
        raise ExportRefused(
            {
                key: ["is required: an export needs both ends of the date range"]
                for key, value in ((from_key, window.start), (to_key, window.end))
                if value is None
            }
        )


def build_export(
    *,
    table: ExportTable,
    queryset: QuerySet,
    window: Window,
    filters: dict,
    fmt: str,
    actor,
    organization,
    surface: str,
    impersonator=None,
) -> ExportResult:
    """Export `queryset` (already scoped to the caller and filtered) over `window`.

    Refuses (ExportRefused) a missing end of the window, an unknown format and more than
    EXPORT_ROW_LIMIT rows. The audit entry is committed when this returns: it runs in its own
    durable transaction, so calling it inside another transaction is a programming error.
    """
    _check_request(table, window, fmt)
    matching = window.apply(queryset, table.date_field).order_by(*table.ordering)
    # One row past the limit tells "too many" without counting a large table twice.
    instances = list(matching[: EXPORT_ROW_LIMIT + 1])
    if len(instances) > EXPORT_ROW_LIMIT:
        raise ExportTooLarge(matching.count())
    body = RENDERERS[fmt](table.columns, table.rows(instances))
    stem = f"{table.name}-{window.start:%Y%m%d}-{window.end:%Y%m%d}"
    with transaction.atomic(durable=True):
        record_audit(
            actor=actor,
            organization=organization,
            action=f"{table.name}.export",
            subject=organization
            if organization is not None
            else ("deployment", "deployment", "deployment"),
            details={
                "window": window.as_details(),
                "filters": filters,
                "format": fmt,
                "row_count": len(instances),
                "surface": surface,
            },
            impersonator=impersonator,
        )
    return ExportResult(body=body, fmt=fmt, filename=f"{stem}.{fmt}", row_count=len(instances))


# --- the audit trail's own export -------------------------------------------------------------

AUDIT_TABLE = ExportTable(
    name="audit",
    columns=AUDIT_READ_FIELDS,
    rows=lambda entries: [audit_entry_row(entry) for entry in entries],
    date_field="created_at",
    ordering=("created_at", "sequence", "id"),
    # Seed 003: the only export also offered as JSONL, because an audit trail is ingested by a
    # log pipeline as often as it is opened in a spreadsheet.
    formats=("csv", "jsonl"),
)


def audit_export(*, user, organization, params, surface: str) -> ExportResult:
    """GET /audit/export and the console's download: the caller's organization, audit:read."""
    filters = parse_audit_filters(params)
    fmt = (params.get("fmt") or "csv").strip().lower()
    return build_export(
        table=AUDIT_TABLE,
        queryset=filters.apply(audit_entries_visible_to(user, organization)),
        window=filters.window,
        filters=filters.as_details(),
        fmt=fmt,
        actor=user,
        organization=organization,
        surface=surface,
    )


def with_shown_window(
    query: QueryDict, keys: tuple[str, str], *, earliest: datetime | None
) -> QueryDict:
    """The page's query with its date window made explicit, for its download link.

    A console page without dates shows everything up to now, while an export needs both ends:
    the link carries the day of the first row the page matches (`earliest`; today when none)
    through today, so "Download" exports what the page shows instead of refusing on first click.
    """
    from_key, to_key = keys
    filled = query.copy()
    today = timezone.now().astimezone(UTC).date()
    if not filled.get(from_key):
        filled[from_key] = (earliest.astimezone(UTC).date() if earliest else today).isoformat()
    if not filled.get(to_key):
        filled[to_key] = today.isoformat()
    return filled


def console_download(request, export, *, page_url: str):
    """A console download: the file, or back to the page it came from with the refusal said in
    words (a missing date, too many rows) and the page's filters kept."""
    from django.contrib import messages
    from django.shortcuts import redirect

    try:
        result = export(
            user=request.user,
            organization=request.organization,
            params=request.GET,
            surface="console",
        )
    except ValidationError as error:
        messages.error(request, "Not exported: " + " ".join(error.messages))
        query = request.GET.copy()
        query.pop("fmt", None)
        return redirect(f"{page_url}?{query.urlencode()}")
    return result.response()
