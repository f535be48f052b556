"""Each document's content type as the registry names it (docs/security.md, "A declared content type"): until now the
upload stored the declared type as sent (lowercased, up to 100 characters) whenever a parser read the bytes by their
file name or as an unknown flavour of text, so a stored type could say anything -- a planted instruction, invisible
characters -- and was listed to every reader and their agents. Uploads now store the registered type the bytes are read
by (``ingestion.parsers.content_type_read``); this gives the documents stored before the same, read the same way
(their type, their source as the file name, their bytes), and ``application/octet-stream`` where no parser reads them
any more (re-ingesting such a document fails as it would have). A type already registered is left as it is. Each
tenant's rows are written acting for that tenant (``app.tenant_id``, local to this migration's transaction), as
``0014`` does. Running it again changes nothing.
"""

from django.db import migrations

UNREAD = "application/octet-stream"


def content_types_registered(apps, schema_editor):
    from ingestion.parsers import SUPPORTED_CONTENT_TYPES, content_type_read
    from ingestion.structure import ParseError

    connection = schema_editor.connection
    Tenant = apps.get_model("accounts", "Tenant")
    Document = apps.get_model("kb", "Document")
    db = connection.alias
    registered = set(SUPPORTED_CONTENT_TYPES)
    with connection.cursor() as cursor:
        for tenant_id in Tenant.objects.using(db).order_by("pk").values_list("pk", flat=True):
            cursor.execute("SELECT set_config('app.tenant_id', %s, true)", [str(tenant_id)])
            stray = (Document.objects.using(db).filter(tenant_id=tenant_id).exclude(content_type__in=registered)
                     .order_by("pk").values_list("pk", flat=True))
            for document_id in list(stray):
                document = Document.objects.using(db).only("content_type", "source", "raw").get(pk=document_id)
                try:
                    read = content_type_read(document.content_type, document.source or None, bytes(document.raw or b""))
                except ParseError:
                    read = UNREAD
                if read != document.content_type:
                    Document.objects.using(db).filter(pk=document_id).update(content_type=read)
        cursor.execute("SELECT set_config('app.tenant_id', '', true)")


class Migration(migrations.Migration):

    dependencies = [
        ('kb', '0016_section_title_candidate_and_root_indexes'),
    ]

    operations = [
        migrations.RunPython(content_types_registered, migrations.RunPython.noop),
    ]
