"""The trail in the Django admin: read-only, app admins only, exports audited like the API's."""

from __future__ import annotations

from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.db.models import Max, Min

from agenticos.admin_base import ReadOnlyAdmin
from apps.orgs.models import Organization

from .exports import AUDIT_TABLE, build_export
from .models import AuditEntry, ImpersonationSession
from .selectors import Window


def _export(modeladmin, request, queryset, fmt: str):
    """Export the selected entries through the same exporter (and audit entry) as the API."""
    selected = queryset.order_by()
    span = selected.aggregate(start=Min("created_at"), end=Max("created_at"))
    if span["start"] is None:
        modeladmin.message_user(request, "Nothing selected to export.", messages.WARNING)
        return None
    organization_ids = sorted(set(selected.values_list("organization_id", flat=True).distinct()))
    # An export of one organization's entries is recorded in that organization's own trail, so
    # its auditors see that an app admin took it; a mixed selection goes to the deployment chain.
    organization = None
    if len(organization_ids) == 1 and organization_ids[0] is not None:
        organization = Organization.objects.filter(pk=organization_ids[0]).first()
    filters = {key: request.GET.getlist(key) for key in request.GET if key not in ("o", "p")}
    filters["organization_ids"] = organization_ids
    try:
        result = build_export(
            table=AUDIT_TABLE,
            queryset=queryset,
            window=Window(span["start"], span["end"]),
            filters=filters,
            fmt=fmt,
            actor=request.user,
            organization=organization,
            surface="admin",
        )
    except ValidationError as error:
        modeladmin.message_user(
            request, "Not exported: " + " ".join(error.messages), messages.ERROR
        )
        return None
    return result.response()


@admin.action(description="Export selected entries as CSV (recorded in the trail)")
def export_csv(modeladmin, request, queryset):
    return _export(modeladmin, request, queryset, "csv")


@admin.action(description="Export selected entries as JSONL (recorded in the trail)")
def export_jsonl(modeladmin, request, queryset):
    return _export(modeladmin, request, queryset, "jsonl")


@admin.register(AuditEntry)
class AuditEntryAdmin(ReadOnlyAdmin):
    list_display = (
        "created_at",
        "action",
        "actor_label",
        "impersonator_id",
        "organization_id",
        "subject_type",
        "subject_label",
        "chain",
        "sequence",
    )
    list_filter = ("action", "created_at", "organization", "chain")
    search_fields = ("action", "actor_label", "subject_label", "=subject_id", "subject_type")
    ordering = ("-created_at", "-id")
    actions = [export_csv, export_jsonl]
    show_full_result_count = False
    fields = (
        "created_at",
        "action",
        "actor_id",
        "actor_label",
        "impersonator_id",
        "organization_id",
        "subject_type",
        "subject_id",
        "subject_label",
        "details",
        "ip_address",
        "chain",
        "sequence",
        "prev_hash",
        "entry_hash",
    )
    readonly_fields = fields

    def get_queryset(self, request):
        # The change list never needs the details JSON; the detail page reads it.
        queryset = super().get_queryset(request)
        return (
            queryset.defer("details")
            if request.resolver_match.url_name.endswith("changelist")
            else queryset
        )


@admin.register(ImpersonationSession)
class ImpersonationSessionAdmin(ReadOnlyAdmin):
    list_display = ("impersonator", "target", "started_at", "expires_at", "ended_at")
    list_select_related = ("impersonator", "target")
    search_fields = ("impersonator__email", "target__email")
    list_filter = ("started_at", ("ended_at", admin.EmptyFieldListFilter))
    readonly_fields = ("impersonator", "target", "started_at", "expires_at", "ended_at", "reason")
