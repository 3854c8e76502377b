"""Approvals and questions in the admin: read-mostly, searchable, filtered. A decision is made in
the queue or the API (services), never by editing a row here."""

from django.contrib import admin

from .models import Question, ToolApproval


@admin.register(ToolApproval)
class ToolApprovalAdmin(admin.ModelAdmin):
    list_display = [
        "id",
        "tool_name",
        "agent",
        "run",
        "status",
        "decided_via",
        "decided_by",
        "created_at",
        "decided_at",
    ]
    list_filter = ["status", "decided_via", "organization", "created_at"]
    search_fields = [
        "tool_name",
        "tool_id",
        "agent__name",
        "delegate_name",
        "decided_by__email",
        "run__user__email",
        "note",
    ]
    list_select_related = ["agent", "run", "decided_by"]
    raw_id_fields = ["organization", "run", "agent", "delegate_agent", "decided_by"]
    readonly_fields = [f.name for f in ToolApproval._meta.fields]
    date_hierarchy = "created_at"

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(Question)
class QuestionAdmin(admin.ModelAdmin):
    list_display = ["id", "run", "asked_user", "status", "created_at", "answered_at"]
    list_filter = ["status", "organization", "created_at"]
    search_fields = ["asked_user__email", "tool_call_id"]
    raw_id_fields = ["organization", "run", "asked_user"]
    readonly_fields = [f.name for f in Question._meta.fields]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False
