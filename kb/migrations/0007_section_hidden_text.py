"""Sections record the text a reader does not see that ingestion cut out (issue 24): how many
characters, and the flags of text kept although unseen (a PDF's OCR layer)."""

import django.contrib.postgres.fields
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("kb", "0006_row_level_security")]

    operations = [
        migrations.AddField(
            model_name="section",
            name="hidden_chars_removed",
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.AddField(
            model_name="section",
            name="hidden_text_flags",
            field=django.contrib.postgres.fields.ArrayField(
                base_field=models.TextField(), blank=True, default=list, size=None
            ),
        ),
    ]
