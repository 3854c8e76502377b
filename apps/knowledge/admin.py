"""Admin for knowledge: read and filter; writes go through the services (context:edit, audited),
so documents are uploaded in the console or the API, and the heavy fields stay deferred."""

from django.contrib import admin

from .models import Chunk, Collection, CollectionGrant, Document, Skill


@admin.register(Collection)
class CollectionAdmin(admin.ModelAdmin):
    list_display = [
        "name",
        "organization",
        "restricted",
        "embedder",
        "embedding_model",
        "created_at",
    ]
    list_filter = ["restricted", "embedder", "organization"]
    search_fields = ["name", "description"]
    readonly_fields = [
        "embedder",
        "embedding_profile",
        "embedding_model",
        "dimensions",
        "created_by",
    ]


@admin.register(CollectionGrant)
class CollectionGrantAdmin(admin.ModelAdmin):
    list_display = ["collection", "user", "granted_by", "created_at"]
    list_filter = ["collection__organization"]
    search_fields = ["collection__name", "user__email"]


@admin.register(Document)
class DocumentAdmin(admin.ModelAdmin):
    list_display = [
        "file_name",
        "collection",
        "status",
        "chunks_done",
        "chunks_total",
        "created_at",
    ]
    list_filter = ["status", "media_type", "organization"]
    search_fields = ["file_name", "org_unit", "failure_reason"]
    exclude = ["content"]
    # The index job's claim (lease, attempts) is the worker's and the sweep's alone.
    readonly_fields = [
        "status",
        "chunks_done",
        "chunks_total",
        "failure_reason",
        "sha256",
        "lease_expires_at",
        "attempts",
    ]

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("collection").defer("content")


@admin.register(Chunk)
class ChunkAdmin(admin.ModelAdmin):
    list_display = ["document", "ordinal", "page", "dimensions"]
    list_filter = ["dimensions", "collection"]
    search_fields = ["text", "document__file_name"]
    exclude = ["embedding", "search_vector"]

    def get_queryset(self, request):
        return (
            super()
            .get_queryset(request)
            .select_related("document")
            .defer("embedding", "search_vector")
        )


@admin.register(Skill)
class SkillAdmin(admin.ModelAdmin):
    """Read only: a skill changes through the services (skills:edit, audited)."""

    list_display = ["name", "organization", "updated_at"]
    list_filter = ["organization"]
    search_fields = ["name", "description"]
    readonly_fields = ["organization", "name", "description", "body", "files", "created_by"]

    def has_add_permission(self, request):
        return False
