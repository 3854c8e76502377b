"""Runs and conversations in the admin, an operator's home: read-only rows (only the runner
writes them), but a run can be cancelled through the same service as the console and the API,
and the run history exports as CSV or JSONL through the one exporter (apps.audit.exports).

A run's page shows its turns, steps, approvals and ledger entries inline instead of the stored
transcript as one JSON blob; list pages defer the heavy fields and select what they display in
the same query (tests/test_admin.py counts them)."""

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.utils.html import format_html, format_html_join

from agenticos.admin_base import ReadOnlyAdmin, export_actions
from apps.approvals.models import ToolApproval

from . import services
from .choices import TERMINAL_STATUSES
from .exports import RUNS_TABLE
from .models import Conversation, Message, Run, RunStep


def run_label(run: Run) -> str:
    """ "Run #147 — AgenticOS — Completed": the run, its agent and its state, in words."""
    return f"Run #{run.pk} — {run.agent.name} — {run.get_status_display()}"


class MessageInline(admin.TabularInline):
    model = Message
    fk_name = "run"
    fields = ("created_at", "role", "content", "run_status", "cost_usd", "cost_is_partial")
    readonly_fields = fields
    extra = 0
    can_delete = False
    verbose_name = "turn"
    verbose_name_plural = "transcript (turns)"

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False


class RunStepInline(admin.TabularInline):
    model = RunStep
    fields = ("number", "kind", "detail", "input_tokens", "output_tokens", "cost_usd", "created_at")
    readonly_fields = fields
    extra = 0
    can_delete = False
    ordering = ("number",)

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False


class ToolApprovalInline(admin.TabularInline):
    model = ToolApproval
    fields = (
        "tool_name",
        "status",
        "decided_via",
        "decided_by",
        "note",
        "created_at",
        "decided_at",
    )
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.action(description="Cancel selected runs (as the console's Cancel run)")
def cancel_runs(modeladmin, request, queryset):
    cancelled, skipped = 0, 0
    for run in queryset.select_related("organization"):
        if run.status in TERMINAL_STATUSES:
            skipped += 1
            continue
        try:
            services.run_cancel(actor=request.user, run=run)
        except PermissionDenied as denied:
            modeladmin.message_user(
                request, f"Run #{run.pk} not cancelled: {denied}", messages.ERROR
            )
            continue
        cancelled += 1
    if cancelled:
        modeladmin.message_user(request, f"Cancel asked for {cancelled} run(s).", messages.SUCCESS)
    if skipped:
        modeladmin.message_user(
            request,
            f"{skipped} run(s) had already ended and were left as they were.",
            messages.WARNING,
        )


@admin.register(Run)
class RunAdmin(ReadOnlyAdmin):
    list_display = (
        "label",
        "organization",
        "surface",
        "status",
        "model_label",
        "cost_usd",
        "cost_is_partial",
        "user_email",
        "created_at",
    )
    list_display_links = ("label",)
    list_filter = ("status", "surface", "organization", "agent", "cost_is_partial", "created_at")
    search_fields = ("=id", "agent__name", "user__email", "model_label")
    list_select_related = ("organization", "agent", "user")
    date_hierarchy = "created_at"
    show_full_result_count = False
    actions = [cancel_runs, *export_actions(RUNS_TABLE, noun="runs", date_field="created_at")]
    inlines = [MessageInline, RunStepInline, ToolApprovalInline]
    exclude = ("transcript",)
    readonly_fields = ("ledger_entries",)

    def get_queryset(self, request):
        # The transcript can be large; no page here reads it (the turns are shown inline).
        return super().get_queryset(request).defer("transcript", "input", "output")

    @admin.display(description="Run", ordering="pk")
    def label(self, run):
        return run_label(run)

    @admin.display(description="Started by", ordering="user__email")
    def user_email(self, run):
        return run.user.email if run.user_id else "—"

    @admin.display(description="Ledger entries")
    def ledger_entries(self, run):
        ledger = getattr(run, "ledger", None) if hasattr(run, "ledger") else None
        entries = list(ledger.entries.order_by("created_at", "pk")) if ledger else []
        if not entries:
            return "None booked."
        rows = format_html_join(
            "",
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{} in / {} out</td><td>${}</td><td>{}</td></tr>",
            (
                (
                    e.created_at.strftime("%Y-%m-%d %H:%M:%S UTC"),
                    e.get_kind_display(),
                    f"{e.provider} {e.model_name}".strip(),
                    e.input_tokens,
                    e.output_tokens,
                    e.cost_usd,
                    "priced" if e.priced else "not priced",
                )
                for e in entries
            ),
        )
        return format_html(
            "<table><thead><tr><th>When</th><th>Kind</th><th>Model</th><th>Tokens</th>"
            "<th>Cost</th><th>Priced</th></tr></thead><tbody>{}</tbody></table>",
            rows,
        )


@admin.register(Conversation)
class ConversationAdmin(ReadOnlyAdmin):
    list_display = ("id", "title", "organization", "agent", "user", "surface", "updated_at")
    list_filter = ("surface", "organization", "updated_at")
    search_fields = ("=id", "title", "agent__name", "user__email")
    list_select_related = ("organization", "agent", "user")
    date_hierarchy = "updated_at"


@admin.register(Message)
class MessageAdmin(ReadOnlyAdmin):
    list_display = (
        "id",
        "conversation",
        "role",
        "cost_usd",
        "cost_is_partial",
        "run_status",
        "created_at",
    )
    list_filter = ("role", "run_status", "cost_is_partial")
    search_fields = ("=conversation__id", "content")
    list_select_related = ("conversation",)


@admin.register(RunStep)
class RunStepAdmin(ReadOnlyAdmin):
    list_display = ("id", "run", "number", "kind", "cost_usd")
    list_filter = ("kind",)
    search_fields = ("=run__id",)
    list_select_related = ("run", "run__agent")
