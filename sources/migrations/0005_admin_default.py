"""The default an admin set on a synced document, as its syncs keep it (``SourceItem.admin_default``), and on a
detached path's tombstone, which a re-attach hands back: an admin's narrowing stays a bound after the document's
default has met the source's (docs/sources.md, "Documents a source owns")."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('sources', '0004_detached'),
    ]

    operations = [
        migrations.AddField(
            model_name='sourceitem',
            name='admin_default',
            field=models.JSONField(blank=True, default=None, null=True),
        ),
        migrations.AddField(
            model_name='sourcedetached',
            name='admin_default',
            field=models.JSONField(blank=True, default=None, null=True),
        ),
    ]
