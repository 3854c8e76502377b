"""Triggers in the admin: read them, pause and resume them (through the services, audited).
Their beat entries are also listed under django-celery-beat's Periodic tasks."""

from django.contrib import admin, messages

from . import services
from .models import Trigger, TriggerFire


@admin.register(Trigger)
class TriggerAdmin(admin.ModelAdmin):
    list_display = ("name", "kind", "agent", "organization", "enabled", "last_fired_at")
    list_filter = ("kind", "enabled")
    search_fields = ("name", "agent__name")
    readonly_fields = [f.name for f in Trigger._meta.fields]
    actions = ["pause", "resume"]

    def has_add_permission(self, request):
        return False  # created through the API or the console (a secret is shown once there)

    @admin.action(description="Pause the selected triggers")
    def pause(self, request, queryset):
        for trigger in queryset.select_related("agent", "organization"):
            services.trigger_pause(actor=request.user, trigger=trigger)
        messages.success(request, "Paused.")

    @admin.action(description="Resume the selected triggers")
    def resume(self, request, queryset):
        for trigger in queryset.select_related("agent", "organization"):
            services.trigger_resume(actor=request.user, trigger=trigger)
        messages.success(request, "Resumed.")


@admin.register(TriggerFire)
class TriggerFireAdmin(admin.ModelAdmin):
    list_display = ("trigger", "via", "outcome", "run", "created_at")
    list_filter = ("via", "outcome")
    search_fields = ("trigger__name", "detail")
    readonly_fields = [f.name for f in TriggerFire._meta.fields]

    def has_add_permission(self, request):
        return False
