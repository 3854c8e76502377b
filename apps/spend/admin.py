"""The ledger in the admin: read-only, because money moves only through the budget guard."""

from django.contrib import admin

from agenticos.admin_base import ReadOnlyAdmin

from .models import BudgetCounter, Ledger, LedgerEntry


@admin.register(Ledger)
class LedgerAdmin(ReadOnlyAdmin):
    list_display = ("run", "organization", "agent", "cost_usd", "cost_is_partial", "request_count", "updated_at")
    list_filter = ("cost_is_partial", "organization")
    search_fields = ("=run__id", "agent__name", "organization__name")
    list_select_related = ("run", "organization", "agent")


@admin.register(LedgerEntry)
class LedgerEntryAdmin(ReadOnlyAdmin):
    list_display = ("id", "organization", "agent", "kind", "provider", "model_name", "cost_usd", "priced", "month")
    list_filter = ("kind", "provider", "priced", "month")
    search_fields = ("model_name", "agent__name", "organization__name")
    list_select_related = ("organization", "agent")


@admin.register(BudgetCounter)
class BudgetCounterAdmin(ReadOnlyAdmin):
    list_display = ("scope", "organization", "agent", "month", "committed_usd", "reserved_usd")
    list_filter = ("scope", "month")
    search_fields = ("organization__name", "agent__name")
    list_select_related = ("organization", "agent")
