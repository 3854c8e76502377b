"""Ratings in the admin: read-only, with the app admin's CSV export of the selected rows
(comments included: this is where they are read in bulk)."""

import csv

from django.contrib import admin
from django.http import HttpResponse

from apps.audit.services import record_audit

from .models import MessageRating


@admin.register(MessageRating)
class MessageRatingAdmin(admin.ModelAdmin):
    list_display = ("message", "run", "user", "thumb", "updated_at", "organization")
    list_filter = ("thumb",)
    search_fields = ("comment", "user__email")
    readonly_fields = [f.name for f in MessageRating._meta.fields]
    actions = ["export_csv"]

    def has_add_permission(self, request):
        return False

    @admin.action(description="Export the selected ratings as CSV")
    def export_csv(self, request, queryset):
        rows = list(queryset.select_related("user").order_by("updated_at", "pk"))
        response = HttpResponse(content_type="text/csv")
        response["Content-Disposition"] = 'attachment; filename="ratings.csv"'
        writer = csv.writer(response)
        writer.writerow(
            ["organization_id", "run_id", "message_id", "user", "thumb", "comment", "updated_at"]
        )
        for rating in rows:
            writer.writerow(
                [
                    rating.organization_id,
                    rating.run_id,
                    rating.message_id,
                    rating.user.email,
                    rating.thumb,
                    rating.comment,
                    rating.updated_at.isoformat(),
                ]
            )
        record_audit(
            actor=request.user,
            organization=None,
            action="ratings.export",
            subject=("ratings", "admin", "ratings export"),
            details={"row_count": len(rows)},
        )
        return response
