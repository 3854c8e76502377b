"""The trail in the Django admin: read-only, app admins only, exports audited like the API's."""

from __future__ import annotations

from django.contrib import admin

from agenticos.admin_base import ReadOnlyAdmin, export_actions

from .exports import AUDIT_TABLE
from .models import AuditEntry, ImpersonationSession


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
    # The one exporter's rules (selection's span as the window, 10,000-row cap, its own entry).
    actions = export_actions(AUDIT_TABLE, noun="entries", date_field="created_at")
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
