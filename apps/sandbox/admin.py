"""Admin for workspaces, their files and the operation log: read-only views for operators.

Files are listed by path and size, never with their content: a workspace can hold a person's
files, and an admin page showing bytes would be a way around who may see them. Nothing is
changed here — a workspace's files are written by the tools of its own runs.
"""

from django.contrib import admin

from .models import Workspace, WorkspaceFile, WorkspaceOperation


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(Workspace)
class WorkspaceAdmin(ReadOnlyAdmin):
    list_display = [
        "owner_label",
        "organization",
        "agent",
        "backend",
        "scope",
        "size_bytes",
        "last_used_at",
    ]
    list_filter = ["backend", "scope", "organization"]
    search_fields = ["owner_label", "key"]

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("organization", "agent")


@admin.register(WorkspaceFile)
class WorkspaceFileAdmin(ReadOnlyAdmin):
    list_display = ["path", "workspace", "is_dir", "size", "version", "modified_at"]
    list_filter = ["is_dir"]
    search_fields = ["path"]
    exclude = ["content"]

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("workspace").defer("content")


@admin.register(WorkspaceOperation)
class WorkspaceOperationAdmin(ReadOnlyAdmin):
    list_display = ["created_at", "workspace", "operation", "path", "run_id", "outcome"]
    list_filter = ["operation", "outcome"]
    search_fields = ["path"]

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("workspace")
