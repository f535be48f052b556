from django.contrib import admin

from kb.models import Chunk, Document, IndexVersion, IngestionJob, Section


@admin.register(Document)
class DocumentAdmin(admin.ModelAdmin):
    list_display = ("title", "tenant", "content_type", "status", "access_level", "updated_at")
    list_filter = ("tenant", "status", "content_type")
    search_fields = ("title", "source")
    exclude = ("raw",)
    readonly_fields = ("sha256", "size_bytes", "created_at", "updated_at")


@admin.register(Section)
class SectionAdmin(admin.ModelAdmin):
    list_display = ("__str__", "document", "kind", "access_level", "access_groups", "start", "end")
    list_filter = ("tenant", "kind", "access_level")


@admin.register(Chunk)
class ChunkAdmin(admin.ModelAdmin):
    list_display = ("id", "document", "ordinal", "token_count", "access_level", "index_version")
    list_filter = ("tenant", "access_level")
    exclude = ("embedding",)
    readonly_fields = ("search_vector",)


@admin.register(IndexVersion)
class IndexVersionAdmin(admin.ModelAdmin):
    list_display = ("short_id", "tenant", "name", "status", "is_active", "created_at")
    list_filter = ("tenant", "is_active", "status")


@admin.register(IngestionJob)
class IngestionJobAdmin(admin.ModelAdmin):
    list_display = ("id", "tenant", "kind", "status", "stage", "done", "total", "created_at", "finished_at")
    list_filter = ("tenant", "status", "kind")
