from rest_framework import serializers

from agenticos.params import IdField, StrictJSONMixin
from apps.channels.choices import Platform, UnlinkedSenders
from apps.channels.models import Binding
from apps.channels.services import webhook_url


class BindingCreateSerializer(StrictJSONMixin, serializers.Serializer):
    agent_id = IdField()
    platform = serializers.ChoiceField(choices=Platform.choices)
    name = serializers.CharField(max_length=120)
    # Vault secrets (purpose "channel"): the bot's token, and what proves an inbound webhook
    # (Slack's signing secret, Telegram's secret_token, Mattermost's outgoing webhook token).
    bot_token_secret_id = IdField()
    verification_secret_id = IdField()
    server_url = serializers.CharField(max_length=300, required=False, default="", allow_blank=True)
    prompt = serializers.CharField(max_length=20_000, required=False, default="", allow_blank=True)
    sandbox_scope = serializers.CharField(
        max_length=16, required=False, default="", allow_blank=True
    )
    # {"tools": [...], "default_limit": 20}: the channel_tools grant (nothing by default).
    channel_tools = serializers.DictField(required=False, default=dict)
    unlinked_senders = serializers.ChoiceField(
        choices=UnlinkedSenders.choices, required=False, default=UnlinkedSenders.RUN
    )
    sender_limit_per_minute = serializers.IntegerField(
        required=False, allow_null=True, default=None, min_value=1, max_value=1000
    )


class BindingSerializer(serializers.ModelSerializer):
    webhook_url = serializers.SerializerMethodField()
    bot_token_secret_id = serializers.IntegerField(source="bot_token_id", read_only=True)
    verification_secret_id = serializers.IntegerField(read_only=True)

    def get_webhook_url(self, binding) -> str:
        return webhook_url(binding)

    class Meta:
        model = Binding
        fields = [
            "id",
            "agent_id",
            "platform",
            "name",
            "bot_token_secret_id",
            "verification_secret_id",
            "server_url",
            "prompt",
            "sandbox_scope",
            "channel_tools",
            "unlinked_senders",
            "sender_limit_per_minute",
            "enabled",
            "disabled_reason",
            "created_by_id",
            "created_at",
            "webhook_url",
        ]
        read_only_fields = fields


class BindingTestSerializer(serializers.Serializer):
    ok = serializers.BooleanField()
    detail = serializers.CharField()
