from django.contrib import admin

from .models import BudgetCounter, Ledger, LedgerEntry


@admin.register(Ledger)
class LedgerAdmin(admin.ModelAdmin):
    list_display = ("run", "organization", "agent", "cost_usd", "cost_is_partial", "request_count")
    readonly_fields = [f.name for f in Ledger._meta.fields]


@admin.register(LedgerEntry)
class LedgerEntryAdmin(admin.ModelAdmin):
    list_display = ("id", "organization", "agent", "kind", "provider", "model_name", "cost_usd", "priced", "month")
    list_filter = ("kind", "provider", "priced")
    readonly_fields = [f.name for f in LedgerEntry._meta.fields]


@admin.register(BudgetCounter)
class BudgetCounterAdmin(admin.ModelAdmin):
    list_display = ("scope", "organization", "agent", "month", "committed_usd", "reserved_usd")
    readonly_fields = [f.name for f in BudgetCounter._meta.fields]
