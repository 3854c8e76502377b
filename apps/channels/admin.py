"""Chat channels in the admin: read only (writes go through the services, audited), searched by
name, filtered by platform and organization. Credentials show as their vault secret ids."""

from django.contrib import admin

from .models import AccountLink, Binding, ChannelMessage, ChatThread, LinkRequest


class ReadOnly(admin.ModelAdmin):
    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(Binding)
class BindingAdmin(ReadOnly):
    list_display = ["name", "platform", "agent", "organization", "enabled", "created_at"]
    list_filter = ["platform", "enabled", "organization"]
    search_fields = ["name", "agent__name"]


@admin.register(ChannelMessage)
class ChannelMessageAdmin(ReadOnly):
    list_display = ["binding", "delivery_id", "sender_id", "outcome", "run", "created_at"]
    list_filter = ["outcome", "binding__platform"]
    search_fields = ["delivery_id", "sender_id"]
    # The message's text is the sender's; the list shows who and what became of it.
    exclude = ["event"]


@admin.register(AccountLink)
class AccountLinkAdmin(ReadOnly):
    list_display = ["platform", "account_key", "user", "organization", "created_at"]
    list_filter = ["platform", "organization"]
    search_fields = ["account_key", "user__email"]


@admin.register(ChatThread)
class ChatThreadAdmin(ReadOnly):
    list_display = ["chat_key", "binding", "conversation", "created_at"]
    list_filter = ["binding__platform"]
    search_fields = ["chat_key"]


@admin.register(LinkRequest)
class LinkRequestAdmin(ReadOnly):
    # The token itself is never stored; the hash is left out of the page too.
    list_display = ["account_key", "binding", "expires_at", "used_at", "created_at"]
    list_filter = ["binding__platform"]
    search_fields = ["account_key"]
    exclude = ["token_hash"]
