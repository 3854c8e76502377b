from rest_framework import serializers

from agenticos.params import StrictJSONMixin
from apps.mcp.choices import Scope, Transport
from apps.mcp.models import McpConnection


class McpConnectionSerializer(serializers.ModelSerializer):
    """A connection as people read it: never its token, only whether it has one and its hint."""

    scope = serializers.CharField(read_only=True)
    owner_id = serializers.IntegerField(read_only=True, allow_null=True)
    has_token = serializers.SerializerMethodField()
    token_hint = serializers.SerializerMethodField()
    tool_count = serializers.SerializerMethodField()

    class Meta:
        model = McpConnection
        fields = [
            "id",
            "name",
            "scope",
            "owner_id",
            "url",
            "transport",
            "prefix",
            "has_token",
            "token_hint",
            "tools",
            "tool_count",
            "tools_listed_at",
            "created_at",
            "updated_at",
        ]
        read_only_fields = fields

    def get_has_token(self, connection) -> bool:
        return connection.token_secret_id is not None

    def get_token_hint(self, connection) -> str:
        return connection.token_secret.hint if connection.token_secret_id else ""

    def get_tool_count(self, connection) -> int:
        return len(connection.tools or [])


class McpConnectionCreateSerializer(StrictJSONMixin, serializers.Serializer):
    name = serializers.CharField(max_length=100)
    url = serializers.CharField(max_length=500)
    transport = serializers.ChoiceField(
        choices=Transport.choices, default=Transport.STREAMABLE_HTTP
    )
    scope = serializers.ChoiceField(choices=Scope.choices, default=Scope.ORGANIZATION)
    prefix = serializers.CharField(max_length=40, required=False)
    token = serializers.CharField(
        write_only=True, required=False, allow_blank=True, max_length=8192
    )


class McpConnectionUpdateSerializer(StrictJSONMixin, serializers.Serializer):
    name = serializers.CharField(max_length=100, required=False)
    url = serializers.CharField(max_length=500, required=False)
    transport = serializers.ChoiceField(choices=Transport.choices, required=False)
    prefix = serializers.CharField(max_length=40, required=False)
    # A new token rotates the stored one; clear_token removes it.
    token = serializers.CharField(write_only=True, required=False, max_length=8192)
    clear_token = serializers.BooleanField(required=False, default=False)


class McpTestResultSerializer(serializers.Serializer):
    ok = serializers.BooleanField()
    error = serializers.CharField(allow_blank=True)
    tools = serializers.ListField(child=serializers.DictField())
