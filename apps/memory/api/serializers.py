from rest_framework import serializers

from agenticos.params import StrictJSONMixin
from apps.memory.choices import ContextMode
from apps.memory.models import BODY_MAX_CHARS, NAME_MAX, ContextFile


class ContextFileListSerializer(serializers.ModelSerializer):
    """A file in the list: everything but the body (``body_chars`` says how long it is)."""

    body_chars = serializers.IntegerField(read_only=True)
    created_by_id = serializers.IntegerField(read_only=True)
    updated_by_id = serializers.IntegerField(read_only=True)

    class Meta:
        model = ContextFile
        fields = [
            "id",
            "name",
            "description",
            "format",
            "mode",
            "body_chars",
            "created_by_id",
            "updated_by_id",
            "created_at",
            "updated_at",
        ]


class ContextFileSerializer(ContextFileListSerializer):
    class Meta(ContextFileListSerializer.Meta):
        fields = [*ContextFileListSerializer.Meta.fields, "body"]


class ContextFileWriteSerializer(StrictJSONMixin, serializers.Serializer):
    """Create (name required) or change (any subset) a file. Business rules live in the service."""

    name = serializers.CharField(max_length=NAME_MAX)
    description = serializers.CharField(max_length=300, allow_blank=True, required=False)
    format = serializers.CharField(max_length=32, allow_blank=True, required=False)
    body = serializers.CharField(
        max_length=BODY_MAX_CHARS, allow_blank=True, trim_whitespace=False, required=False
    )
    mode = serializers.ChoiceField(choices=ContextMode.choices, required=False)
