"""The ledger in the admin: read-only, because money moves only through the budget guard. Per-run
spend (ledgers) and ledger entries export as CSV or JSONL through the one exporter
(apps.audit.exports): the selection's span is the window, 10,000 rows at most, one audit entry."""

from django.contrib import admin

from agenticos.admin_base import ReadOnlyAdmin, export_actions
from apps.audit.exports import ExportTable

from .models import (
    BudgetCounter,
    Ledger,
    LedgerEntry,
    ModelPrice,
    SpendDayBuild,
    SpendDayChange,
    SpendDayCrossing,
    SpendDayEntries,
    SpendDayLatency,
    SpendDayRuns,
)
from .services import model_price_delete, model_price_save

SPEND_COLUMNS = (
    "run_id",
    "organization_id",
    "agent_id",
    "cost_usd",
    "cost_is_partial",
    "input_tokens",
    "output_tokens",
    "request_count",
    "created_at",
    "updated_at",
)
# Per-run spend, as the spend export names its audit entry (``spend.export``).
SPEND_TABLE = ExportTable(
    name="spend",
    columns=SPEND_COLUMNS,
    rows=lambda ledgers: [{c: getattr(ledger, c) for c in SPEND_COLUMNS} for ledger in ledgers],
    date_field="created_at",
    ordering=("created_at", "run_id"),
)
LEDGER_ENTRY_COLUMNS = (
    "id",
    "created_at",
    "month",
    "organization_id",
    "agent_id",
    "run_id",
    "kind",
    "provider",
    "model_name",
    "input_tokens",
    "output_tokens",
    "cost_usd",
    "priced",
)
LEDGER_ENTRIES_TABLE = ExportTable(
    name="ledger_entries",
    columns=LEDGER_ENTRY_COLUMNS,
    rows=lambda entries: [
        {
            **{c: getattr(e, c, None) for c in LEDGER_ENTRY_COLUMNS},
            "run_id": e.ledger.run_id if e.ledger_id else None,
        }
        for e in entries
    ],
    date_field="created_at",
    ordering=("created_at", "id"),
)


@admin.register(Ledger)
class LedgerAdmin(ReadOnlyAdmin):
    list_display = (
        "run",
        "organization",
        "agent",
        "cost_usd",
        "cost_is_partial",
        "request_count",
        "updated_at",
    )
    list_filter = ("cost_is_partial", "organization", "agent", "created_at")
    search_fields = ("=run__id", "agent__name", "organization__name")
    list_select_related = ("run", "organization", "agent")
    date_hierarchy = "created_at"
    actions = export_actions(SPEND_TABLE, noun="spend (one row per run)", date_field="created_at")


@admin.register(LedgerEntry)
class LedgerEntryAdmin(ReadOnlyAdmin):
    list_display = (
        "id",
        "organization",
        "agent",
        "kind",
        "provider",
        "model_name",
        "cost_usd",
        "priced",
        "month",
    )
    list_filter = ("kind", "provider", "priced", "organization", "agent", "month")
    search_fields = ("model_name", "agent__name", "organization__name", "=ledger__run__id")
    list_select_related = ("organization", "agent")
    date_hierarchy = "created_at"
    actions = export_actions(LEDGER_ENTRIES_TABLE, noun="ledger entries", date_field="created_at")

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("ledger")


@admin.register(BudgetCounter)
class BudgetCounterAdmin(ReadOnlyAdmin):
    list_display = ("scope", "organization", "agent", "month", "committed_usd", "reserved_usd")
    list_filter = ("scope", "month", "organization")
    search_fields = ("organization__name", "agent__name")
    list_select_related = ("organization", "agent")


@admin.register(ModelPrice)
class ModelPriceAdmin(admin.ModelAdmin):
    """An operator's price for a model genai-prices does not know, from a date on; applied to
    the ledger by ``agenticos reprice`` (docs/budgets.md, "Repricing a floor")."""

    list_display = (
        "model_name",
        "provider",
        "input_usd_per_million",
        "output_usd_per_million",
        "applies_from",
        "created_by",
    )
    search_fields = ("model_name", "provider")
    list_filter = ("provider", "applies_from")
    readonly_fields = ("created_by", "created_at")

    def save_model(self, request, obj, form, change):
        model_price_save(actor=request.user, price=obj, created=not change)

    def delete_model(self, request, obj):
        model_price_delete(actor=request.user, price=obj)


# The per-day rollup (docs/spend.md, "The per-day rollup"): caches rebuilt from the ledger, shown
# read-only so an operator can see which days are built and what changed them since.


@admin.register(SpendDayBuild)
class SpendDayBuildAdmin(ReadOnlyAdmin):
    list_display = ("organization", "day", "built_seq", "covers_until", "built_at")
    list_filter = ("day", "organization")
    search_fields = ("organization__name",)


@admin.register(SpendDayChange)
class SpendDayChangeAdmin(ReadOnlyAdmin):
    list_display = ("organization_id", "day", "xid", "seq")
    list_filter = ("day",)
    search_fields = ("=organization_id", "=xid")


@admin.register(SpendDayRuns)
class SpendDayRunsAdmin(ReadOnlyAdmin):
    list_display: tuple[str, ...] = ("organization", "day", "top_level", "agent_id", "provider")
    list_display += ("status", "run_count", "partial_run_count", "cost_usd", "own_usd")
    list_filter = ("day", "top_level", "provider", "status", "surface", "organization")
    search_fields = ("organization__name", "=agent_id", "=user_id")


@admin.register(SpendDayLatency)
class SpendDayLatencyAdmin(ReadOnlyAdmin):
    list_display = ("organization", "day", "user_id", "duration_ms", "run_count")
    list_filter = ("day", "organization")
    search_fields = ("organization__name", "=user_id")


@admin.register(SpendDayEntries)
class SpendDayEntriesAdmin(ReadOnlyAdmin):
    list_display: tuple[str, ...] = ("organization", "day", "month", "kind", "agent_id")
    list_display += ("cost_usd", "entry_count", "unpriced_count")
    list_filter = ("day", "month", "kind", "organization")
    search_fields = ("organization__name", "=agent_id", "=user_id")


@admin.register(SpendDayCrossing)
class SpendDayCrossingAdmin(ReadOnlyAdmin):
    list_display = ("organization", "day", "run_id", "root_id", "agent_id", "started_at")
    list_filter = ("day", "organization")
    search_fields = ("organization__name", "=run_id", "=root_id")
