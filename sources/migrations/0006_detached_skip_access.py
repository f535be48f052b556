"""Who may see a detached path as the last sync that listed it decided (``SourceDetached.skip_access``), kept on its
tombstone: the detached list read it from the last finished sync alone, so a sync that wrote no row of the path (a
failed listing, the file gone from the source) forgot an access file's narrowing (docs/security.md, attack19)."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('sources', '0005_admin_default'),
    ]

    operations = [
        migrations.AddField(
            model_name='sourcedetached',
            name='skip_access',
            field=models.JSONField(blank=True, default=None, null=True),
        ),
    ]
