from rest_framework import serializers

from agenticos.params import StrictJSONMixin
from apps.vault.models import USER_PURPOSES, Secret


class SecretSerializer(serializers.ModelSerializer):
    """What a secret shows: never its value, only the last characters as a hint."""

    class Meta:
        model = Secret
        fields = ["id", "name", "purpose", "hint", "created_at", "rotated_at"]
        read_only_fields = fields


class SecretCreateSerializer(StrictJSONMixin, serializers.Serializer):
    name = serializers.CharField(max_length=100)
    purpose = serializers.ChoiceField(choices=USER_PURPOSES)
    value = serializers.CharField(write_only=True, trim_whitespace=True, max_length=8192)


class SecretRotateSerializer(StrictJSONMixin, serializers.Serializer):
    value = serializers.CharField(write_only=True, trim_whitespace=True, max_length=8192)
