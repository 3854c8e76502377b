"""Admin: agents (actions call the services), read-only versions, model profiles, sandbox
connections. Specs are edited in the Builder or over the API, never here, so every change goes
through the same validation and audit."""

from __future__ import annotations

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied, ValidationError

from . import services
from .models import Agent, AgentVersion, ModelProfile, SandboxConnection
from .services import PublishRefused


class AgentVersionInline(admin.TabularInline):
    model = AgentVersion
    extra = 0
    can_delete = False
    # A tuple: django-stubs types the two attributes as different lists, and one tuple fits both.
    fields = readonly_fields = ("number", "published_by", "published_at", "note")
    show_change_link = True

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Agent)
class AgentAdmin(admin.ModelAdmin):
    list_display = [
        "name",
        "organization",
        "status",
        "is_template",
        "current_version",
        "updated_at",
    ]
    list_filter = ["status", "is_template", "organization"]
    search_fields = ["name", "organization__name"]
    list_select_related = ["organization", "current_version"]
    date_hierarchy = "updated_at"
    readonly_fields = [
        "organization",
        "draft_spec",
        "current_version",
        "is_template",
        "created_by",
        "created_at",
        "updated_at",
        "status",
    ]
    fields = [
        "organization",
        "name",
        "description",
        "status",
        "is_template",
        "current_version",
        "draft_spec",
        "created_by",
        "created_at",
        "updated_at",
    ]
    inlines = [AgentVersionInline]
    actions = ["publish_drafts", "archive_agents"]

    def has_add_permission(self, request):
        return False  # agents are created in the console or the API, from the template

    def has_delete_permission(self, request, obj=None):
        return False  # archiving is a state, not a delete

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("organization", "current_version")

    def save_model(self, request, obj, form, change):
        services.agent_update_draft(
            actor=request.user,
            agent=obj,
            name=form.cleaned_data["name"],
            description=form.cleaned_data["description"],
        )

    @admin.action(description="Publish the draft of the selected agents")
    def publish_drafts(self, request, queryset):
        for agent in queryset:
            try:
                version = services.agent_publish(actor=request.user, agent=agent)
            except PublishRefused as refused:
                messages.error(
                    request, f"{agent.name}: not published — " + "; ".join(map(str, refused.errors))
                )
            except (PermissionDenied, ValidationError) as error:
                messages.error(request, f"{agent.name}: {error}")
            else:
                messages.success(request, f"{agent.name}: published v{version.number}")

    @admin.action(description="Archive the selected agents")
    def archive_agents(self, request, queryset):
        for agent in queryset:
            try:
                services.agent_archive(actor=request.user, agent=agent)
            except (PermissionDenied, ValidationError) as error:
                messages.error(request, f"{agent.name}: {error}")


@admin.register(AgentVersion)
class AgentVersionAdmin(admin.ModelAdmin):
    """Published versions are frozen: readable here, never changed."""

    list_display = ["agent", "number", "published_by", "published_at"]
    list_filter = ["agent__organization", "published_at"]
    search_fields = ["agent__name", "note"]
    list_select_related = ["agent", "published_by"]
    date_hierarchy = "published_at"

    def get_readonly_fields(self, request, obj=None):
        return [f.name for f in AgentVersion._meta.fields]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(ModelProfile)
class ModelProfileAdmin(admin.ModelAdmin):
    list_display = ["label", "organization", "provider", "model_name", "is_default"]
    list_filter = ["provider", "organization"]
    search_fields = ["label", "model_name"]
    raw_id_fields = ["secret"]


@admin.register(SandboxConnection)
class SandboxConnectionAdmin(admin.ModelAdmin):
    list_display = ["label", "name", "organization", "base_url", "is_default"]
    list_filter = ["organization", "is_default"]
    search_fields = ["label", "name", "base_url", "organization__name"]
    raw_id_fields = ["secret"]
