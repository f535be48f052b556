"""The embedding cache becomes per tenant and per policy. Existing entries cannot be attributed
to a tenant and are dropped (they are a cache: the next ingestion refills it)."""

import django.contrib.postgres.fields
import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0001_initial"),
        ("kb", "0004_chunk_hnsw_ef_construction_200"),
    ]

    operations = [
        migrations.RunSQL("DELETE FROM kb_embeddingcacheentry", reverse_sql=migrations.RunSQL.noop),
        migrations.RemoveConstraint(model_name="embeddingcacheentry", name="embeddingcache_unique"),
        migrations.AddField(
            model_name="embeddingcacheentry",
            name="tenant",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE, related_name="+", to="accounts.tenant", default=None
            ),
            preserve_default=False,
        ),
        migrations.AddField(
            model_name="embeddingcacheentry",
            name="access_level",
            field=models.PositiveSmallIntegerField(
                choices=[(0, "public"), (1, "internal"), (2, "confidential"), (3, "restricted")], default=3
            ),
            preserve_default=False,
        ),
        migrations.AddField(
            model_name="embeddingcacheentry",
            name="access_groups",
            field=django.contrib.postgres.fields.ArrayField(
                base_field=models.BigIntegerField(), blank=True, default=list, size=None
            ),
        ),
        migrations.AddConstraint(
            model_name="embeddingcacheentry",
            constraint=models.UniqueConstraint(
                fields=("tenant", "model", "content_hash", "access_level", "access_groups"),
                name="embeddingcache_unique_scope",
            ),
        ),
        migrations.AddConstraint(
            model_name="embeddingcacheentry",
            constraint=models.CheckConstraint(condition=models.Q(access_level__lte=3), name="embeddingcache_level_known"),
        ),
    ]
