from django.contrib import admin

from agenticos.admin_base import ReadOnlyAdmin

from .models import BudgetWarningSent, Notification, NotificationOptOut, UsageReportSent


@admin.register(Notification)
class NotificationAdmin(admin.ModelAdmin):
    list_display = ["title", "user", "organization", "kind", "created_at", "read_at"]
    list_filter = ["kind", "organization", ("read_at", admin.EmptyFieldListFilter), "created_at"]
    search_fields = ["title", "user__email", "=run__id"]
    raw_id_fields = ["organization", "user", "run"]
    list_select_related = ["user", "organization"]
    date_hierarchy = "created_at"


@admin.register(NotificationOptOut)
class NotificationOptOutAdmin(admin.ModelAdmin):
    list_display = ["user", "kind", "channel"]
    list_filter = ["kind", "channel"]
    search_fields = ["user__email"]


@admin.register(UsageReportSent)
class UsageReportSentAdmin(ReadOnlyAdmin):
    list_display = ["agent", "period", "period_start", "sent_at"]
    list_filter = ["period", "period_start"]
    search_fields = ["agent__name"]


@admin.register(BudgetWarningSent)
class BudgetWarningSentAdmin(ReadOnlyAdmin):
    """The budget warnings that went out: the record that each threshold warned once a month."""

    list_display = ["counter", "threshold", "spent_usd", "limit_usd", "sent_at"]
    list_filter = ["threshold", "sent_at"]
    search_fields = ["counter__organization__name", "counter__agent__name"]
    list_select_related = ["counter"]
