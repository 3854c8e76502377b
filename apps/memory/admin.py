"""Admin for context files and memory notes. Context file writes go through services, so they
need context:edit and are audited exactly like API writes; the body is deferred in the list.

Memory notes are listed without their content and cannot be opened for it: reading another
person's notes is `GET /api/v1/memory/person/{id}/`, which records who read them and why; an
admin page showing bodies would be a way around that audit. Erasure is a service too (Settings →
Memory, the erase API)."""

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied, ValidationError

from . import services
from .models import ContextFile, MemoryNote


@admin.register(ContextFile)
class ContextFileAdmin(admin.ModelAdmin):
    list_display = ["name", "organization", "mode", "format", "updated_at"]
    list_filter = ["mode", "organization"]
    search_fields = ["name", "description"]
    readonly_fields = ["created_by", "updated_by", "created_at", "updated_at"]
    fields = ["organization", "name", "description", "format", "mode", "body", *readonly_fields]

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("organization").defer("body")

    def get_readonly_fields(self, request, obj=None):
        # The organization is chosen once: moving a file would silently unbind it from agents.
        return [*self.readonly_fields, "organization"] if obj is not None else self.readonly_fields

    def save_model(self, request, obj, form, change):
        values = {
            field: form.cleaned_data.get(field)
            for field in services.EDITABLE_FIELDS
            if field in form.cleaned_data
        }
        try:
            if change:
                saved = services.context_file_update(actor=request.user, context_file=obj, **values)
            else:
                saved = services.context_file_create(
                    actor=request.user, organization=form.cleaned_data["organization"], **values
                )
        except (PermissionDenied, ValidationError) as error:
            self.message_user(request, f"Not saved: {error}", level=messages.ERROR)
            return
        obj.pk = saved.pk

    def delete_model(self, request, obj):
        services.context_file_delete(actor=request.user, context_file=obj)

    def delete_queryset(self, request, queryset):
        for context_file in queryset:
            services.context_file_delete(actor=request.user, context_file=context_file)


@admin.register(MemoryNote)
class MemoryNoteAdmin(admin.ModelAdmin):
    list_display = [
        "name",
        "agent",
        "organization",
        "owner_user",
        "chat_key",
        "suspended_at",
        "updated_at",
    ]
    list_filter = ["organization", "suspended_at"]
    search_fields = ["name", "agent__name", "owner_user__email", "chat_key"]
    # A tuple: django-stubs types the two attributes as different lists, and one tuple fits both.
    fields = readonly_fields = (
        "organization",
        "agent",
        "owner_user",
        "chat_key",
        "name",
        "suspended_at",
        "written_by_run",
        "created_at",
        "updated_at",
    )

    def get_queryset(self, request):
        return (
            super()
            .get_queryset(request)
            .select_related("organization", "agent", "owner_user")
            .defer("body")
        )

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
