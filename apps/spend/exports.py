"""GET /spend/export and the Spend page's download: the per-agent spend over a window, as CSV.

Seed 003, "Exportar a CSV": the export carries only the window's figures — ``cost_usd``,
``run_count`` and ``partial_run_count``. The Spend tab's ``month_to_date_usd`` and
``monthly_cap_usd`` stay out: they read the calendar month while ``cost_usd`` reads the export's
window, and two dollar columns on two time bases in one downloaded file end up summed by someone
who cannot see the difference. A downloaded file carries one time basis, the window asked for —
and says which, in its ``window_from``/``window_to`` columns, so a file pasted next to another
still names its basis. ``partial_run_count`` is its own column, so a floor survives a spreadsheet's
sum. Top-level runs only, so summing ``cost_usd`` gives the bill, not double.

Gate ``runs:view`` (the tab's), with the same OWN floor as the runs export for a reader whose
grant reaches less than the organization. Both ends of the window are required, more than
10,000 rows is refused with the count, and the read is audited as ``spend.export`` — all by the
shared exporter (apps.audit.exports).
"""

from __future__ import annotations

from apps.audit.exports import ExportResult, ExportTable, build_export

from .aggregates import SpendScope, scoped_runs, spend_rows_by_agent
from .filters import parse_export_window

SPEND_EXPORT_COLUMNS = (
    "agent_id",
    "agent_name",
    "cost_usd",
    "run_count",
    "partial_run_count",
    "window_from",
    "window_to",
)


def _table(window) -> ExportTable:
    def rows(groups: list[dict]) -> list[dict]:
        return [
            {**group, "window_from": window.start.isoformat(), "window_to": window.end.isoformat()}
            for group in groups
        ]

    return ExportTable(
        name="spend",
        columns=SPEND_EXPORT_COLUMNS,
        rows=rows,
        # Each run is windowed by when it started (a queued one by when it was asked for), like
        # the run history: the spend file and the runs file of one window hold the same runs.
        date_field="started",
        ordering=("agent_name", "agent_id"),
    )


def spend_export(*, user, organization, params, surface: str) -> ExportResult:
    window = parse_export_window(params)
    scope = SpendScope.for_reader(user, organization)
    top_level = scoped_runs(scope).filter(parent_run__isnull=True)
    filters = {"scope": "own"} if scope.is_own else {}
    return build_export(
        table=_table(window),
        # Grouped after windowing: the exporter adds the window's WHERE to the runs, then the
        # row limit counts agents (the rows of the file), not runs.
        queryset=_WindowedGroups(top_level),  # type: ignore[arg-type]  # a QuerySet's filter/order/slice
        window=window,
        filters=filters,
        fmt=(params.get("fmt") or "csv").strip().lower(),
        actor=user,
        organization=organization,
        surface=surface,
    )


class _WindowedGroups:
    """The per-agent grouping, applied after the exporter's window filter.

    ``build_export`` filters its queryset on ``date_field`` and then orders, slices and counts it.
    Filtering an already grouped ``values()`` queryset on a plain annotation works in Django, but
    leaning on that would make the grouping's correctness depend on the ORM's WHERE/HAVING
    placement; this wrapper makes the order explicit: window the runs, then group them.
    """

    def __init__(self, runs):
        self._runs = runs

    def filter(self, **lookups):
        return _WindowedGroups(self._runs.filter(**lookups))

    def order_by(self, *fields):
        return spend_rows_by_agent(self._runs).order_by(*fields)
