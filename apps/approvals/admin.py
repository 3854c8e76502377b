"""Approvals and questions in the admin, an operator's home: the rows are read-only (no field is
edited here), but a pending call can be approved or rejected with a note from the changelist —
through ``services.approval_decide``, the same service as the queue and the API, so the decision
is audited and resumes the run, and a call already decided is refused with what became of it
(the API's 409). Both export as CSV or JSONL through the one exporter (apps.audit.exports)."""

from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.core.exceptions import PermissionDenied, ValidationError
from django.template.response import TemplateResponse

from agenticos.admin_base import export_actions

from . import services
from .choices import ApprovalStatus
from .exports import APPROVALS_TABLE
from .models import Question, ToolApproval


def _decide(modeladmin, request, queryset, decision: str):
    """First an intermediate page asking for the note; then one decision per selected call."""
    verb = "Approve" if decision == "approve" else "Reject"
    if request.POST.get("confirm") != "yes":
        return TemplateResponse(
            request,
            "admin/approvals/decide.html",
            {
                **modeladmin.admin_site.each_context(request),
                "title": f"{verb} {queryset.count()} call(s)",
                "verb": verb,
                "action": request.POST.get("action"),
                "approvals": queryset.select_related("agent", "run"),
                "opts": modeladmin.model._meta,
                "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
            },
        )
    note = request.POST.get("note", "")
    decided = 0
    for approval in queryset.select_related("organization"):
        try:
            services.approval_decide(
                actor=request.user, approval=approval, decision=decision, note=note
            )
        except services.AlreadyDecided as refused:
            modeladmin.message_user(
                request, f"Call #{approval.pk} ({approval.tool_name}): {refused}", messages.ERROR
            )
        except (PermissionDenied, ValidationError) as refused:
            text = (
                " ".join(refused.messages) if isinstance(refused, ValidationError) else str(refused)
            )
            modeladmin.message_user(
                request, f"Call #{approval.pk} not decided: {text}", messages.ERROR
            )
        else:
            decided += 1
    if decided:
        past = "Approved" if decision == "approve" else "Rejected"
        modeladmin.message_user(
            request, f"{past} {decided} call(s); their runs resume.", messages.SUCCESS
        )
    return None


@admin.action(description="Approve selected pending calls (with a note)")
def approve_calls(modeladmin, request, queryset):
    return _decide(modeladmin, request, queryset, "approve")


@admin.action(description="Reject selected pending calls (with a note)")
def reject_calls(modeladmin, request, queryset):
    return _decide(modeladmin, request, queryset, "reject")


class PendingFirst(admin.SimpleListFilter):
    title = "waiting"
    parameter_name = "waiting"

    def lookups(self, request, model_admin):
        return [("yes", "Waiting for a decision"), ("no", "Decided or expired")]

    def queryset(self, request, queryset):
        if self.value() == "yes":
            return queryset.filter(status=ApprovalStatus.PENDING)
        if self.value() == "no":
            return queryset.exclude(status=ApprovalStatus.PENDING)
        return queryset


@admin.register(ToolApproval)
class ToolApprovalAdmin(admin.ModelAdmin):
    list_display = [
        "id",
        "tool_name",
        "agent",
        "run_label",
        "status",
        "decided_via",
        "decided_by",
        "created_at",
        "decided_at",
    ]
    list_filter = [PendingFirst, "status", "decided_via", "organization", "agent", "created_at"]
    search_fields = [
        "=run__id",
        "tool_name",
        "tool_id",
        "agent__name",
        "delegate_name",
        "decided_by__email",
        "run__user__email",
        "note",
    ]
    list_select_related = ["agent", "run", "run__agent", "decided_by"]
    raw_id_fields = ["organization", "run", "agent", "delegate_agent", "decided_by"]
    readonly_fields = [f.name for f in ToolApproval._meta.fields]
    date_hierarchy = "created_at"
    actions = [
        approve_calls,
        reject_calls,
        *export_actions(APPROVALS_TABLE, noun="approvals", date_field="created_at"),
    ]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def get_queryset(self, request):
        # approval_row (the export's read model) reads the agent, the run and its person.
        return (
            super()
            .get_queryset(request)
            .select_related("agent", "run", "run__user", "run__agent", "decided_by")
        )

    @admin.display(description="Run", ordering="run_id")
    def run_label(self, approval):
        run = approval.run
        return f"Run #{run.pk} — {run.agent.name} — {run.get_status_display()}"


@admin.register(Question)
class QuestionAdmin(admin.ModelAdmin):
    list_display = ["id", "run", "asked_user", "status", "created_at", "answered_at"]
    list_filter = ["status", "organization", "created_at"]
    search_fields = ["asked_user__email", "tool_call_id", "=run__id"]
    list_select_related = ["run", "asked_user"]
    raw_id_fields = ["organization", "run", "asked_user"]
    readonly_fields = [f.name for f in Question._meta.fields]
    date_hierarchy = "created_at"

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False
