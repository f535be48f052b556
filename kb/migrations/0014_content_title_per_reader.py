"""A document's title and tags from its content, decided per reader (docs/security.md, "A title taken from a heading").

``Document.title`` and ``Document.tags`` become what every reader is shown -- a title the uploader typed, else
"untitled"; the tags the uploader typed -- and the content's own move beside them: ``content_title``, shown to a member
who may read the section bearing it (``title_section``), and ``content_tags`` (a front matter's), shown to one who may
read the root (``kb.titles.reader_title``, ``reader_tags``). Until now one title was chosen for every reader, and it
depended on sections a reader may not read.

Existing documents are recorded conservatively, as the old rule read them: a content title (``metadata["content_title"]``,
or, for a document stored before titles were marked, a title equal to a section's) is borne by the first section so
titled, else the root; a list of tags stored before typed and content tags were split is the content's (shown to readers
of the root only) until new content is stored. Each tenant's rows are written acting for that tenant
(``app.tenant_id``, local to this migration's transaction), as ``0012`` does. Running it again changes nothing.
"""

import django.contrib.postgres.fields
import django.contrib.postgres.indexes
from django.db import migrations, models

UNTITLED = "untitled"
TITLE_CHARS = 500


def record_content_titles(apps, schema_editor):
    connection = schema_editor.connection
    Tenant = apps.get_model("accounts", "Tenant")
    Document = apps.get_model("kb", "Document")
    Section = apps.get_model("kb", "Section")
    db = connection.alias
    with connection.cursor() as cursor:
        for tenant_id in Tenant.objects.using(db).order_by("pk").values_list("pk", flat=True):
            cursor.execute("SELECT set_config('app.tenant_id', %s, true)", [str(tenant_id)])
            documents = (Document.objects.using(db).filter(tenant_id=tenant_id).order_by("pk")
                         .only("pk", "title", "tags", "metadata"))
            for document in documents.iterator(chunk_size=500):
                metadata = dict(document.metadata or {})
                fields = _title_fields(document, metadata, Section.objects.using(db))
                fields.update(_tag_fields(document, metadata))
                fields["metadata"] = metadata
                Document.objects.using(db).filter(pk=document.pk).update(**fields)
        cursor.execute("SELECT set_config('app.tenant_id', '', true)")


def _title_fields(document, metadata: dict, sections) -> dict:
    if metadata.get("title_given"):
        return {"content_title": "", "title_section": None}
    ordered = sections.filter(document_id=document.pk).order_by("order")
    if "content_title" in metadata:
        candidate = str(metadata.get("content_title") or "")
    elif document.title not in ("", UNTITLED) and any(
            t[:TITLE_CHARS] == document.title for t in ordered.values_list("title", flat=True)):
        candidate = document.title  # stored before titles were marked: a heading's title is the content's (as before)
        metadata["content_title"] = candidate
    else:
        return {}  # typed (unmarked), or none: as it is
    bearer = None
    if candidate:
        key = candidate[:TITLE_CHARS]
        bearer = next((pk for pk, title in ordered.values_list("pk", "title") if title[:TITLE_CHARS] == key), None)
        if bearer is None:
            bearer = ordered.filter(parent_id=None).values_list("pk", flat=True).first()
    return {"title": UNTITLED, "content_title": candidate[:TITLE_CHARS] if bearer else "", "title_section": bearer}


def _tag_fields(document, metadata: dict) -> dict:
    typed = metadata.get("tags_typed")
    if typed is None:  # stored before the split: a list of unknown origin, the content's (readers of the root)
        content = metadata.get("content_tags", list(document.tags or ()))
        metadata["content_tags"] = sorted({str(t) for t in content})
        return {"tags": [], "content_tags": metadata["content_tags"]}
    return {"tags": sorted({str(t) for t in typed}),
            "content_tags": sorted({str(t) for t in metadata.get("content_tags") or ()})}


class Migration(migrations.Migration):

    dependencies = [
        ('kb', '0013_job_cause'),
    ]

    operations = [
        migrations.AddField(
            model_name='document',
            name='content_title',
            field=models.CharField(blank=True, default='', max_length=500),
        ),
        migrations.AddField(
            model_name='document',
            name='title_section',
            field=models.UUIDField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='document',
            name='content_tags',
            field=django.contrib.postgres.fields.ArrayField(base_field=models.CharField(max_length=100), blank=True,
                                                            default=list, size=None),
        ),
        migrations.AddIndex(
            model_name='document',
            index=django.contrib.postgres.indexes.GinIndex(fields=['content_tags'], name='document_content_tags_gin'),
        ),
        migrations.RunPython(record_content_titles, migrations.RunPython.noop),
    ]
