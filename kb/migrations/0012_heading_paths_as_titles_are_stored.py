"""Stored heading paths cut as the section titles are stored (docs/security.md, "Change times": a long heading).

Ingestion derived a section's heading path from the parsed titles, whole, while every re-derivation after a policy
change derives it from the rows' titles, cut to 1,000 characters (``kb.services.document_access_of``, now the one
derivation): the first policy change of any section of a document with a longer heading would "rename" the sections
under it, moving their change times for readers who saw nothing change. Each element of a stored path longer than a
row's title is such a heading, stored whole: cut to the row's length, it is the path a re-derivation makes. No change
time moves (what the readers read of those sections -- the titles as stored and shown -- is as it was), and no chunk
is rebuilt (an embedded prefix keeps the whole heading, which every reader of the chunk may read).

Each tenant's rows are written acting for that tenant (``app.tenant_id``, local to this migration's transaction), as
``accounts/0010`` does, so that it works as a role the tenant wall holds too.
"""

from django.db import migrations

TITLE_CHARS = 1000  # Section.title's max_length


def cut_long_paths(apps, schema_editor):
    connection = schema_editor.connection
    Tenant = apps.get_model("accounts", "Tenant")
    with connection.cursor() as cursor:
        for tenant_id in Tenant.objects.using(connection.alias).order_by("pk").values_list("pk", flat=True):
            cursor.execute("SELECT set_config('app.tenant_id', %s, true)", [str(tenant_id)])
            cursor.execute(
                "UPDATE kb_section SET heading_path = ARRAY(SELECT left(p, %s) FROM unnest(heading_path) "
                "WITH ORDINALITY AS t(p, i) ORDER BY i)::text[] "
                "WHERE tenant_id = %s AND EXISTS (SELECT 1 FROM unnest(heading_path) AS p WHERE char_length(p) > %s)",
                [TITLE_CHARS, tenant_id, TITLE_CHARS])
        cursor.execute("SELECT set_config('app.tenant_id', '', true)")


class Migration(migrations.Migration):

    dependencies = [
        ('kb', '0011_change_times'),
    ]

    operations = [
        migrations.RunPython(cut_long_paths, migrations.RunPython.noop),
    ]
