"""Runs and conversations in the admin: read-only, because only the runner writes them."""

from django.contrib import admin

from agenticos.admin_base import ReadOnlyAdmin

from .models import Conversation, Message, Run, RunStep


@admin.register(Run)
class RunAdmin(ReadOnlyAdmin):
    list_display = ("id", "organization", "agent", "status", "surface", "cost_usd", "cost_is_partial", "created_at")
    list_filter = ("status", "surface", "cost_is_partial", "organization")
    search_fields = ("=id", "agent__name", "user__email")
    list_select_related = ("organization", "agent")

    def get_queryset(self, request):
        # The transcript can be large; the change page loads it, the list never does.
        return super().get_queryset(request).defer("transcript")


@admin.register(Conversation)
class ConversationAdmin(ReadOnlyAdmin):
    list_display = ("id", "organization", "agent", "user", "surface", "updated_at")
    list_filter = ("surface", "organization")
    search_fields = ("=id", "title", "agent__name", "user__email")
    list_select_related = ("organization", "agent", "user")


@admin.register(Message)
class MessageAdmin(ReadOnlyAdmin):
    list_display = ("id", "conversation", "role", "cost_usd", "cost_is_partial", "run_status", "created_at")
    list_filter = ("role", "run_status", "cost_is_partial")
    search_fields = ("=conversation__id", "content")


@admin.register(RunStep)
class RunStepAdmin(ReadOnlyAdmin):
    list_display = ("id", "run", "number", "kind", "cost_usd")
    list_filter = ("kind",)
    search_fields = ("=run__id",)
