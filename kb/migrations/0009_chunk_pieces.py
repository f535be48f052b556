"""A chunk's pieces (issue 30, ``ChunkingConfig.piece_weight``): its sentences' and lines' vectors, stored
with the chunk and with the embedding cache's entry of its text (``ingestion.pieces.pack_pieces``: n x 384
float16, ~0.75 kB a piece).

Both columns are nullable (existing rows and versions without pieces hold none) and live on tables that are
already behind the tenant wall (0006: row-level security is per row, so a new column is covered; the
application role's grants are per table, accounts/0002). ``STORAGE EXTERNAL``: half floats do not compress, so
PostgreSQL is not made to try; a row holding several pieces is over the 2 kB TOAST threshold and its pieces go
out of line, so the heap row the exact vector scan reads stays as narrow as before (0003 keeps the embedding
inline for that scan) and the pieces are read only for the candidates a search re-scores.
"""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("kb", "0008_screening")]

    operations = [
        migrations.AddField(
            model_name="chunk",
            name="pieces",
            field=models.BinaryField(blank=True, editable=False, null=True),
        ),
        migrations.AddField(
            model_name="embeddingcacheentry",
            name="pieces",
            field=models.BinaryField(blank=True, editable=False, null=True),
        ),
        migrations.RunSQL(
            "ALTER TABLE kb_chunk ALTER COLUMN pieces SET STORAGE EXTERNAL; "
            "ALTER TABLE kb_embeddingcacheentry ALTER COLUMN pieces SET STORAGE EXTERNAL",
            migrations.RunSQL.noop,
        ),
    ]
