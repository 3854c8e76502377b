"""Admin building blocks shared by the apps."""

from django.contrib import admin


class ReadOnlyAdmin(admin.ModelAdmin):
    """Records that only services write (ledgers, runs, the audit trail): nothing here can be
    added, changed or deleted from the admin, and only app admins may look."""

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    def has_view_permission(self, request, obj=None):
        return request.user.is_active and request.user.is_superuser

    def has_module_permission(self, request):
        return request.user.is_active and request.user.is_superuser


def export_actions(table, *, noun: str, date_field: str):
    """The CSV and JSONL export actions of a changelist, through the one exporter
    (apps.audit.exports.build_export) and its rules: the window is the selection's span on
    ``date_field`` (both ends always known), more than 10,000 rows is refused with the count,
    and one audit entry (``<table>.export``, surface ``admin``) names window, filters and rows —
    in the organization's own trail when the selection is one organization's, in the
    deployment's when it mixes several."""
    from dataclasses import replace

    from django.contrib import messages
    from django.core.exceptions import ValidationError
    from django.db.models import Max, Min

    from apps.audit.exports import build_export
    from apps.audit.selectors import Window
    from apps.orgs.models import Organization

    # A table already dated by this field keeps its own order (the audit trail's is by chain
    # sequence within a moment).
    ordering = table.ordering if table.date_field == date_field else (date_field, "pk")
    table = replace(table, date_field=date_field, ordering=ordering, formats=("csv", "jsonl"))

    def export(modeladmin, request, queryset, fmt: str):
        selected = queryset.order_by()
        span = selected.aggregate(start=Min(date_field), end=Max(date_field))
        if span["start"] is None:
            modeladmin.message_user(request, "Nothing selected to export.", messages.WARNING)
            return None
        organization_ids = sorted(set(selected.values_list("organization_id", flat=True)))
        organization = None
        if len(organization_ids) == 1:
            organization = Organization.objects.filter(pk=organization_ids[0]).first()
        filters = {key: request.GET.getlist(key) for key in request.GET if key not in ("o", "p")}
        filters["organization_ids"] = organization_ids
        try:
            result = build_export(
                table=table,
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

    def export_csv(modeladmin, request, queryset):
        return export(modeladmin, request, queryset, "csv")

    def export_jsonl(modeladmin, request, queryset):
        return export(modeladmin, request, queryset, "jsonl")

    export_csv = admin.action(description=f"Export selected {noun} as CSV (recorded in the trail)")(
        export_csv
    )
    export_jsonl = admin.action(
        description=f"Export selected {noun} as JSONL (recorded in the trail)"
    )(export_jsonl)
    export_csv.__name__ = f"export_{table.name}_csv"
    export_jsonl.__name__ = f"export_{table.name}_jsonl"
    return [export_csv, export_jsonl]
