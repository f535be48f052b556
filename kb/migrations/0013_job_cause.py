"""What started each ingestion job (``IngestionJob.cause``), a column of its own rather than marks in ``stats``.

Until now a re-derivation after a policy change was told apart by ``stats["rederive"]`` with no ``stats["retry_of"]``
(``kb.selectors.jobs_shown`` hides it from its creator: it is not theirs to follow). The column is filled from those
marks, as every creator wrote them: a job of an index build (the ``reindex`` job and its children) ``index_build``; a
retry (``retry_of``) ``retry``; a re-derivation (``rederive``, no ``retry_of``) ``policy_change``; a source's sync
(``source_sync``) ``source_sync``; any other job ``upload``, the column's default. Only rows still at the default are
written, each by the same marks, so running it again changes nothing.

Each tenant's rows are written acting for that tenant (``app.tenant_id``, local to this migration's transaction), as
``kb/0012`` does, so that it works as a role the tenant wall holds too.
"""

from django.db import migrations, models

CAUSE = """
    CASE
      WHEN j.kind = 'reindex' OR EXISTS (SELECT 1 FROM kb_ingestionjob b WHERE b.id = j.batch_id AND b.kind = 'reindex')
        THEN 'index_build'
      WHEN j.stats ? 'retry_of' THEN 'retry'
      WHEN j.stats @> '{"rederive": true}'::jsonb THEN 'policy_change'
      WHEN j.stats ? 'source_sync' THEN 'source_sync'
      ELSE 'upload'
    END
"""


def fill_causes(apps, schema_editor):
    connection = schema_editor.connection
    Tenant = apps.get_model("accounts", "Tenant")
    with connection.cursor() as cursor:
        for tenant_id in Tenant.objects.using(connection.alias).order_by("pk").values_list("pk", flat=True):
            cursor.execute("SELECT set_config('app.tenant_id', %s, true)", [str(tenant_id)])
            cursor.execute(
                f"UPDATE kb_ingestionjob AS j SET cause = {CAUSE} "
                f"WHERE j.tenant_id = %s AND j.cause = 'upload' AND {CAUSE} <> 'upload'",
                [tenant_id])
        cursor.execute("SELECT set_config('app.tenant_id', '', true)")


class Migration(migrations.Migration):

    dependencies = [
        ('kb', '0012_heading_paths_as_titles_are_stored'),
    ]

    operations = [
        migrations.AddField(
            model_name='ingestionjob',
            name='cause',
            field=models.CharField(choices=[('upload', 'Upload'), ('source_sync', 'Source Sync'), ('policy_change', 'Policy Change'), ('retry', 'Retry'), ('index_build', 'Index Build')], default='upload', max_length=16),
        ),
        migrations.RunPython(fill_causes, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name='ingestionjob',
            constraint=models.CheckConstraint(condition=models.Q(('cause__in', ['upload', 'source_sync', 'policy_change', 'retry', 'index_build'])), name='job_cause_named'),
        ),
    ]
