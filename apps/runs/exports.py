"""GET /runs/export: the run history over a window, as a finance team reconciles it.

Seed 003, "Exportar a CSV": the same filters as GET /runs and the same top-level-only default,
so summing ``cost_usd`` gives the bill and not double; ``parent_run_id`` is a column so whoever
opts into ``include_delegations`` sees which rows would count twice; ``cost_is_partial`` is its
own column so a floor survives a spreadsheet's sum; people appear only as ``user_id``, exactly as
the runs tab shows them. Gate ``runs:view``, with an OWN floor for a reader whose grant reaches
less than the whole organization (no built-in role has that yet; the floor is in place for it).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import replace

from apps.audit.exports import ExportResult, ExportTable, build_export
from apps.audit.selectors import Window
from apps.orgs.permissions import RUNS_VIEW, has_org_permission

from .filters import parse_run_history
from .selectors import run_history

RUN_EXPORT_COLUMNS = (
    "id",
    "started_at",
    "ended_at",
    "duration_ms",
    "status",
    "stop_reason",
    "surface",
    "agent_id",
    "agent_version_id",
    "parent_run_id",
    "conversation_id",
    "user_id",
    "model_label",
    "input_tokens",
    "output_tokens",
    "request_count",
    "cost_usd",
    "cost_is_partial",
)


def run_export_row(run) -> dict:
    duration = run.ended_at - run.started_at if run.started_at and run.ended_at else None
    row = {column: getattr(run, column, None) for column in RUN_EXPORT_COLUMNS}
    row["duration_ms"] = None if duration is None else int(duration.total_seconds() * 1000)
    return row


RUNS_TABLE = ExportTable(
    name="runs",
    columns=RUN_EXPORT_COLUMNS,
    rows=lambda runs: [run_export_row(run) for run in runs],
    # The history's own "started" column (a queued run counts from when it was asked for).
    date_field="started",
    ordering=("started", "id"),
    # JSONL as the audit export offers it: a finance or BI pipeline ingests runs line by line as
    # often as a person opens them in a spreadsheet.
    formats=("csv", "jsonl"),
)


def _own_floor(user, organization, filters):
    """A reader whose runs:view reaches less than the whole organization exports only their own
    rows: a ``user_id`` filter is overwritten with theirs, never widened."""
    if has_org_permission(user, organization, RUNS_VIEW):
        return filters
    return replace(filters, user_ids=(user.pk,))


def runs_export(*, user, organization, params, surface: str) -> ExportResult:
    filters = _own_floor(user, organization, parse_run_history(params))
    window = Window(
        start=filters.started_from,
        # The history's upper bound is exclusive (a date means its whole day); the export's
        # window is inclusive, one microsecond earlier.
        end=None
        if filters.started_before is None
        else filters.started_before - dt.timedelta(microseconds=1),
        keys=("started_from", "started_to"),
    )
    return build_export(
        table=RUNS_TABLE,
        queryset=run_history(user, organization, filters),
        window=window,
        filters=_filters_details(filters),
        fmt=(params.get("fmt") or "csv").strip().lower(),
        actor=user,
        organization=organization,
        surface=surface,
    )


def _filters_details(filters) -> dict:
    details = {
        name: value
        for name, value in vars(filters).items()
        if name not in {"started_from", "started_before", "order_by", "descending"}
        and value not in (None, (), False)
    }
    return {
        name: list(value) if isinstance(value, tuple) else value for name, value in details.items()
    }
