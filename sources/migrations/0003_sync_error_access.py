"""Who may read a sync's own error (a failed listing's, which may name a subfolder or a page): ``error_access``,
and the message the others read, ``error_without_path``. Rows recorded before have none: their error is read only by
an admin who may read every level and group (``sources.selectors.syncs_rows_shown``)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("sources", "0002_row_level_security")]

    operations = [
        migrations.AddField(model_name="sourcesync", name="error_access",
                            field=models.JSONField(blank=True, default=None, null=True)),
        migrations.AddField(model_name="sourcesync", name="error_without_path",
                            field=models.TextField(blank=True, default="")),
    ]
