from rest_framework import serializers

from agenticos.params import StrictJSONMixin

from ..models import (
    SKILL_BODY_MAX,
    SKILL_DESCRIPTION_MAX,
    SKILL_NAME_MAX,
    Collection,
    Document,
    Skill,
)


class CollectionSerializer(serializers.ModelSerializer):
    document_count = serializers.IntegerField(read_only=True, default=0)

    class Meta:
        model = Collection
        fields = [
            "id",
            "name",
            "description",
            "restricted",
            "embedder",
            "embedding_model",
            "dimensions",
            "document_count",
            "created_at",
        ]


class CollectionWriteSerializer(StrictJSONMixin, serializers.Serializer):
    """A new collection. A key it does not know is refused, each named: a misspelt
    ``restricted`` would otherwise make an open collection of what was meant to be closed."""

    name = serializers.CharField(max_length=120)
    description = serializers.CharField(
        max_length=300, required=False, allow_blank=True, default=""
    )
    restricted = serializers.BooleanField(required=False, default=False)
    embedding_profile_id = serializers.IntegerField(
        required=False, allow_null=True, default=None, min_value=1
    )
    dimensions = serializers.IntegerField(
        required=False, allow_null=True, default=None, min_value=1
    )


class CollectionGrantSerializer(StrictJSONMixin, serializers.Serializer):
    user_id = serializers.IntegerField(min_value=1)


class DocumentSerializer(serializers.ModelSerializer):
    progress = serializers.SerializerMethodField()

    class Meta:
        model = Document
        fields = [
            "id",
            "collection_id",
            "file_name",
            "media_type",
            "size_bytes",
            "org_unit",
            "status",
            "chunks_done",
            "chunks_total",
            "progress",
            "failure_reason",
            "pages",
            "created_at",
            "indexed_at",
        ]

    def get_progress(self, document) -> str:
        """What the console shows: "queued", "indexing 12/40 chunks", "ready", "failed: …"."""
        if document.status == "indexing":
            return f"indexing {document.chunks_done}/{document.chunks_total} chunks"
        if document.status == "failed":
            return f"failed: {document.failure_reason}"
        return document.status


class DocumentUploadSerializer(StrictJSONMixin, serializers.Serializer):
    file = serializers.FileField()
    org_unit = serializers.CharField(max_length=120, required=False, allow_blank=True, default="")


class SkillSerializer(serializers.ModelSerializer):
    class Meta:
        model = Skill
        fields = ["id", "name", "description", "body", "files", "created_at", "updated_at"]


class JsonText(serializers.CharField):
    """Text that must arrive as a JSON string (DRF's CharField would store ``3`` as ``"3"``,
    accepting what the schema says is refused)."""

    default_error_messages = {"not_text": "Must be text (a JSON string)."}

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("not_text")
        return super().to_internal_value(data)


class SkillWriteSerializer(StrictJSONMixin, serializers.Serializer):
    """A skill's fields; on a PATCH each is optional. ``files`` is an object of name → text (the
    service checks the names and sizes)."""

    name = JsonText(max_length=SKILL_NAME_MAX)
    description = JsonText(max_length=SKILL_DESCRIPTION_MAX)
    body = JsonText(
        max_length=SKILL_BODY_MAX, required=False, allow_blank=True, trim_whitespace=False
    )
    files = serializers.DictField(
        child=JsonText(allow_blank=True, trim_whitespace=False), required=False
    )
