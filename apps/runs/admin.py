from django.contrib import admin

from .models import Conversation, Message, Run, RunStep


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    list_display = ("id", "organization", "agent", "status", "surface", "cost_usd", "cost_is_partial", "created_at")
    list_filter = ("status", "surface", "cost_is_partial")
    search_fields = ("id", "agent__name", "user__email")
    # The transcript can be large; the change page loads it, the list never does.
    list_select_related = ("organization", "agent")
    readonly_fields = [f.name for f in Run._meta.fields]

    def get_queryset(self, request):
        return super().get_queryset(request).defer("transcript")

    def has_add_permission(self, request):
        return False


@admin.register(Conversation)
class ConversationAdmin(admin.ModelAdmin):
    list_display = ("id", "organization", "agent", "user", "surface", "updated_at")


@admin.register(Message)
class MessageAdmin(admin.ModelAdmin):
    list_display = ("id", "conversation", "role", "cost_usd", "cost_is_partial", "run_status", "created_at")


@admin.register(RunStep)
class RunStepAdmin(admin.ModelAdmin):
    list_display = ("id", "run", "number", "kind", "cost_usd")
