"""A document's time as each reader may know it (``kb.changed``; docs/security.md, "Change times").

``Document.shown_changed_at`` and ``Section.changed_at`` start as the document's ``updated_at`` -- what every
reader was shown until now, so no reader's time moves with the migration and none is told anything new -- and
``SectionGone`` starts empty. ``SectionGone`` is tenant-owned: behind the tenant wall (row-level security, as
0006 does for every table of the knowledge base) and held to its document's tenant (a composite foreign key, as
0002 does for sections and chunks).
"""

import django.contrib.postgres.fields
import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('accounts', '0010_revoke_tokens_of_unknown_minters'),
        ('kb', '0010_section_flagged_head'),
    ]

    operations = [
        migrations.AddField(
            model_name='document',
            name='shown_changed_at',
            field=models.DateTimeField(default=django.utils.timezone.now),
        ),
        migrations.AddField(
            model_name='section',
            name='changed_at',
            field=models.DateTimeField(default=django.utils.timezone.now),
        ),
        migrations.CreateModel(
            name='SectionGone',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('access_level', models.PositiveSmallIntegerField(choices=[(0, 'public'), (1, 'internal'), (2, 'confidential'), (3, 'restricted')])),
                ('access_groups', django.contrib.postgres.fields.ArrayField(base_field=models.BigIntegerField(), blank=True, default=list, size=None)),
                ('gone_at', models.DateTimeField()),
                ('document', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='kb.document')),
                ('tenant', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='accounts.tenant')),
            ],
            options={
                'constraints': [models.UniqueConstraint(fields=('document', 'access_level', 'access_groups'), name='sectiongone_unique_policy'), models.CheckConstraint(condition=models.Q(('access_level__lte', 3)), name='sectiongone_level_known')],
            },
        ),
        migrations.RunSQL(
            "UPDATE kb_document SET shown_changed_at = updated_at; "
            "UPDATE kb_section s SET changed_at = d.updated_at FROM kb_document d WHERE d.id = s.document_id",
            migrations.RunSQL.noop,
        ),
        migrations.RunSQL(
            "ALTER TABLE kb_sectiongone ADD CONSTRAINT sectiongone_document_same_tenant FOREIGN KEY "
            "(document_id, tenant_id) REFERENCES kb_document (id, tenant_id) ON DELETE CASCADE "
            "DEFERRABLE INITIALLY DEFERRED",
            "ALTER TABLE kb_sectiongone DROP CONSTRAINT sectiongone_document_same_tenant",
        ),
        migrations.RunSQL(
            "ALTER TABLE kb_sectiongone ENABLE ROW LEVEL SECURITY; "
            "DROP POLICY IF EXISTS tenant_wall ON kb_sectiongone; "
            "CREATE POLICY tenant_wall ON kb_sectiongone "
            "USING (tenant_id = NULLIF(current_setting('app.tenant_id', true), '')::bigint) "
            "WITH CHECK (tenant_id = NULLIF(current_setting('app.tenant_id', true), '')::bigint)",
            "DROP POLICY IF EXISTS tenant_wall ON kb_sectiongone; "
            "ALTER TABLE kb_sectiongone DISABLE ROW LEVEL SECURITY",
        ),
    ]
