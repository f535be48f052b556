"""The Django admin for the knowledge base: for looking, and for the few fields nothing derives from.

Policies and text are read-only here. Search filters on the policy copied onto each chunk
and embeds each section's readable heading path into its chunks' text, so a policy may only
change through the services that update sections and chunks together
(``kb.services.section_set_access``, ``document_set_access``); text only through a new
ingestion. Sections and chunks are wholly read-only (every field of theirs is derived from
the document by ingestion); a document keeps its title editable (an edited title has no verdict: held in
quarantine mode, ``kb.titles.title_held``). Its tags are read-only: a list edited here had no verdict and was
listed as stored to every reader's agent (``kb.titles.shown_tags``), past the tag rule.
"""

from django.contrib import admin

from accounts.admin import ReadOnlyAdmin
from kb.models import Chunk, Document, IndexVersion, IngestionJob, Section


class DerivedRowAdmin(ReadOnlyAdmin):
    """Shown, never added, changed or deleted here (a document is deleted as a whole); no message."""


@admin.register(Document)
class DocumentAdmin(admin.ModelAdmin):
    list_display = ("title", "tenant", "content_type", "status", "access_level", "updated_at")
    list_filter = ("tenant", "status", "content_type")
    search_fields = ("title", "source")
    exclude = ("raw", "text")  # the bytes and the whole text: large, and never edited here
    readonly_fields = (
        "tenant", "source", "tags", "content_type", "access_level", "access_groups", "sha256", "size_bytes", "metadata",
        "status", "error", "created_by", "created_at", "updated_at",
    )

    def has_add_permission(self, request) -> bool:
        return False  # documents come in through the API or kb_ingest, which ingest them


@admin.register(Section)
class SectionAdmin(DerivedRowAdmin):
    list_display = ("__str__", "document", "kind", "access_level", "access_groups", "start", "end")
    list_filter = ("tenant", "kind", "access_level")


@admin.register(Chunk)
class ChunkAdmin(DerivedRowAdmin):
    list_display = ("id", "document", "ordinal", "token_count", "access_level", "index_version")
    list_filter = ("tenant", "access_level")
    exclude = ("embedding", "pieces")


@admin.register(IndexVersion)
class IndexVersionAdmin(admin.ModelAdmin):
    list_display = ("short_id", "tenant", "name", "status", "is_active", "created_at")
    list_filter = ("tenant", "is_active", "status")


@admin.register(IngestionJob)
class IngestionJobAdmin(admin.ModelAdmin):
    list_display = ("id", "tenant", "kind", "status", "stage", "done", "total", "created_at", "finished_at")
    list_filter = ("tenant", "status", "kind")
