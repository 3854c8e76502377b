"""GET /approvals/export: the approvals log over a window, the same filters as GET /approvals/,
approvals:decide. It keeps the triggering and deciding people's e-mails, as the queue shows them."""

from __future__ import annotations

from apps.audit.exports import ExportResult, ExportTable, build_export

from .selectors import approval_row, approvals_visible_to, parse_approval_filters

APPROVAL_EXPORT_COLUMNS = (
    "id",
    "created_at",
    "decided_at",
    "status",
    "decided_via",
    "decided_in_words",
    "agent_id",
    "agent_name",
    "delegate_name",
    "run_id",
    "tool_name",
    "tool_id",
    "arguments",
    "triggered_by_user_id",
    "triggered_by_email",
    "decided_by_user_id",
    "decided_by_email",
    "note",
)

APPROVALS_TABLE = ExportTable(
    name="approvals",
    columns=APPROVAL_EXPORT_COLUMNS,
    rows=lambda approvals: [approval_row(a) for a in approvals],
    date_field="created_at",
    ordering=("created_at", "id"),
    # JSONL as the audit export offers it: the approvals log feeds the same log pipelines.
    formats=("csv", "jsonl"),
)


def approvals_export(*, user, organization, params, surface: str) -> ExportResult:
    filters = parse_approval_filters(params)
    return build_export(
        table=APPROVALS_TABLE,
        queryset=approvals_visible_to(user, organization)
        .filter(status__in=filters.statuses)
        .filter(
            **(
                {"run__user_id": filters.triggered_by_user_id}
                if filters.triggered_by_user_id is not None
                else {}
            )
        ),
        window=filters.window,
        filters=filters.as_details(),
        fmt=(params.get("fmt") or "csv").strip().lower(),
        actor=user,
        organization=organization,
        surface=surface,
    )
