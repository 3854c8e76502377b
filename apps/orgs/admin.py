"""Admin for accounts, organizations, memberships and API keys. Writes go through services so
they are audited exactly like console and API writes."""

from django.contrib import admin, messages
from django.contrib.auth.admin import UserAdmin as BaseUserAdmin
from django.core.exceptions import PermissionDenied, ValidationError

from . import services
from .models import ApiKey, Invitation, Membership, Organization, User


@admin.register(User)
class UserAdmin(BaseUserAdmin):
    ordering = ["email"]
    list_display = ["email", "full_name", "is_active", "is_superuser", "date_joined"]
    list_filter = ["is_active", "is_superuser", "is_staff"]
    search_fields = ["email", "full_name"]
    fieldsets = (
        (None, {"fields": ("email", "password", "full_name")}),
        ("Access", {"fields": ("is_active", "is_staff", "is_superuser", "groups")}),
        ("Dates", {"fields": ("last_login", "date_joined")}),
    )
    add_fieldsets = ((None, {"classes": ("wide",), "fields": ("email", "password1", "password2")}),)


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0
    fields = ["user", "role", "created_at"]
    readonly_fields = ["user", "role", "created_at"]
    can_delete = False


@admin.register(Organization)
class OrganizationAdmin(admin.ModelAdmin):
    list_display = ["name", "slug", "monthly_budget_usd", "chat_may_waive_approvals", "created_at"]
    list_filter = ["chat_may_waive_approvals", "created_at"]
    search_fields = ["name", "slug"]
    readonly_fields = ["slug", "created_at"]
    inlines = [MembershipInline]

    def save_model(self, request, obj, form, change):
        if not change:
            raise PermissionDenied(
                "Create organizations with `agenticos create-org` so they get an owner."
            )
        original = Organization.objects.get(pk=obj.pk)
        try:
            services.organization_update(
                actor=request.user,
                organization=original,
                name=obj.name,
                monthly_budget_usd=obj.monthly_budget_usd,
                chat_may_waive_approvals=obj.chat_may_waive_approvals,
            )
        except (ValidationError, PermissionDenied) as error:
            self.message_user(request, f"Not saved: {error}", level=messages.ERROR)


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ["user", "organization", "role", "created_at"]
    list_filter = ["role", "organization"]
    search_fields = ["user__email", "organization__name"]
    list_select_related = ["user", "organization"]
    readonly_fields = ["organization", "user", "created_at"]

    def has_add_permission(self, request):
        return False  # invite from Settings → Members, where it is audited

    def save_model(self, request, obj, form, change):
        services.membership_change_role(
            actor=request.user, membership=Membership.objects.get(pk=obj.pk), role=obj.role
        )

    def delete_model(self, request, obj):
        services.membership_remove(actor=request.user, membership=obj)


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    list_display = [
        "name",
        "prefix",
        "user",
        "organization",
        "created_at",
        "last_used_at",
        "revoked_at",
    ]
    list_filter = ["organization", ("revoked_at", admin.EmptyFieldListFilter)]
    search_fields = ["name", "prefix", "user__email", "organization__name"]
    list_select_related = ["user", "organization"]
    # The hash is never shown; keys are created where they can be shown once.
    exclude = ["key_hash"]
    readonly_fields = [
        "organization",
        "user",
        "name",
        "prefix",
        "created_at",
        "last_used_at",
        "revoked_at",
    ]
    actions = ["revoke"]

    def has_add_permission(self, request):
        return False

    @admin.action(description="Revoke selected keys")
    def revoke(self, request, queryset):
        for api_key in queryset:
            services.api_key_revoke(actor=request.user, api_key=api_key)


@admin.register(Invitation)
class InvitationAdmin(admin.ModelAdmin):
    """Invitations are read here; they are sent from Settings → Members (where the invitee's
    answer is the same whether the address has an account or not), and withdrawn through the
    audited service."""

    list_display = ["email", "organization", "role", "created_at", "expires_at", "accepted_at"]
    list_filter = [
        "organization",
        "role",
        ("accepted_at", admin.EmptyFieldListFilter),
        ("revoked_at", admin.EmptyFieldListFilter),
    ]
    search_fields = ["email", "organization__name"]
    list_select_related = ["organization"]
    # The token's hash is never shown: the link is e-mailed once.
    exclude = ["token_hash"]
    readonly_fields = [
        "organization",
        "email",
        "role",
        "invited_by",
        "created_at",
        "expires_at",
        "accepted_at",
        "accepted_by",
        "revoked_at",
    ]
    actions = ["withdraw"]

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False  # withdraw instead: the audit trail keeps the invitation

    @admin.action(description="Withdraw selected invitations")
    def withdraw(self, request, queryset):
        for invitation in queryset:
            try:
                services.invitation_revoke(actor=request.user, invitation=invitation)
            except (services.InvitationClosed, PermissionDenied) as refused:
                self.message_user(request, f"{invitation.email}: {refused}", level=messages.WARNING)
