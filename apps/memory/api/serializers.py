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


class MemoryNoteAdminSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    agent_id = serializers.IntegerField()
    agent_name = serializers.CharField(source="agent.name")
    name = serializers.CharField()
    body = serializers.CharField()
    suspended = serializers.SerializerMethodField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()

    def get_suspended(self, note) -> bool:
        return note.suspended_at is not None


class MemoryPersonSerializer(serializers.Serializer):
    """A person's memory in one tenant. ``mem0_agents`` names the agents whose memories live in
    mem0 and cannot be listed (mem0 answers what matches a question, not what a store holds)."""

    person_id = serializers.IntegerField()
    organization_id = serializers.IntegerField()
    notes = MemoryNoteAdminSerializer(many=True)
    mem0_agents = serializers.ListField(child=serializers.CharField())


class MemoryErasedSerializer(serializers.Serializer):
    notes = serializers.IntegerField(help_text="Notes removed here.")
    mem0_spaces = serializers.IntegerField(help_text="mem0 spaces removed.")
