"""Detached paths (``SourceDetached``): a tombstone each sync skips until an admin re-attaches the path; behind
row-level security as every table of sources (0002)."""

import django.contrib.postgres.fields
import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

TENANT = "NULLIF(current_setting('app.tenant_id', true), '')::bigint"
TABLE = "sources_sourcedetached"


def enable_sql(table: str) -> str:
    return (
        f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY; "
        f"DROP POLICY IF EXISTS tenant_wall ON {table}; "
        f"CREATE POLICY tenant_wall ON {table} USING (tenant_id = {TENANT}) WITH CHECK (tenant_id = {TENANT})"
    )


def disable_sql(table: str) -> str:
    return f"DROP POLICY IF EXISTS tenant_wall ON {table}; ALTER TABLE {table} DISABLE ROW LEVEL SECURITY"


class Migration(migrations.Migration):

    dependencies = [
        ('accounts', '0010_revoke_tokens_of_unknown_minters'),
        ('kb', '0013_job_cause'),
        ('sources', '0003_sync_error_access'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name='SourceDetached',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('path', models.CharField(max_length=2000)),
                ('access_level', models.PositiveSmallIntegerField(choices=[(0, 'public'), (1, 'internal'), (2, 'confidential'), (3, 'restricted')])),
                ('access_groups', django.contrib.postgres.fields.ArrayField(base_field=models.BigIntegerField(), blank=True, default=list, size=None)),
                ('detached_at', models.DateTimeField(auto_now_add=True)),
                ('detached_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('document', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='kb.document')),
                ('source', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='detached', to='sources.source')),
                ('tenant', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='accounts.tenant')),
            ],
            options={
                'constraints': [models.UniqueConstraint(fields=('source', 'path'), name='sourcedetached_unique_path')],
            },
        ),
        migrations.RunSQL(enable_sql(TABLE), disable_sql(TABLE)),
    ]
