"""Each section's title candidate (docs/security.md, "A title taken from a heading"): the document's title the section
bears -- a front matter's on the root, an H1's on its own section -- of which a member is shown the first, in document
order, of a section they may read (``kb.titles.reader_title``). Until now one bearer was chosen per document, and a
member who may not read it was shown "untitled" though they may read a later H1: it told them the hidden bearer is there.

Existing documents are recorded conservatively: the section bearing the content title (``Document.title_section``) is
its only candidate, as the old rule read it, until new content is stored (ingestion lists every candidate). Each
tenant's rows are written acting for that tenant (``app.tenant_id``, local to this migration's transaction), as
``0014`` does. Running it again changes nothing.
"""

from django.db import migrations, models

TITLE_CHARS = 500


def record_candidates(apps, schema_editor):
    connection = schema_editor.connection
    Tenant = apps.get_model("accounts", "Tenant")
    Document = apps.get_model("kb", "Document")
    Section = apps.get_model("kb", "Section")
    db = connection.alias
    with connection.cursor() as cursor:
        for tenant_id in Tenant.objects.using(db).order_by("pk").values_list("pk", flat=True):
            cursor.execute("SELECT set_config('app.tenant_id', %s, true)", [str(tenant_id)])
            documents = (Document.objects.using(db).filter(tenant_id=tenant_id, title_section__isnull=False)
                         .exclude(content_title="").order_by("pk").values_list("pk", "title_section", "content_title"))
            for document_id, section_id, title in documents.iterator(chunk_size=500):
                sections = Section.objects.using(db).filter(document_id=document_id)
                if not sections.filter(pk=section_id).exists():
                    continue  # no such section: no candidate (fail closed: "untitled")
                if sections.exclude(title_candidate="").exists():
                    continue  # recorded already (by ingestion, or a run before): as it is
                sections.filter(pk=section_id).update(title_candidate=title[:TITLE_CHARS])
        cursor.execute("SELECT set_config('app.tenant_id', '', true)")


class Migration(migrations.Migration):

    dependencies = [
        ('kb', '0014_content_title_per_reader'),
    ]

    operations = [
        migrations.AddField(
            model_name='section',
            name='title_candidate',
            field=models.CharField(blank=True, default='', max_length=500),
        ),
        migrations.RunPython(record_candidates, migrations.RunPython.noop),
    ]
