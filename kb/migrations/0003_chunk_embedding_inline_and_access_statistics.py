"""Search performance: keep chunk embeddings in the heap row, and teach the planner that
tenant, index version and access level go together.

* A chunk row is ~2.8 kB (a 1,540-byte vector plus text, embed text and tsvector), above
  the 2 kB TOAST threshold, and pgvector's ``vector`` type is toastable: the vector was
  moved out of line, so the exact (filtered) scan paid a TOAST lookup per row -- 13,500
  buffer accesses for 5,000 rows, 42 ms (docs/benchmarks.md). Storage MAIN keeps it inline
  (vectors do not compress; out-of-line only as a last resort) and lets the text columns be
  compressed or moved instead. It applies to rows written from now on (ingestion rewrites
  a document's chunks; ``VACUUM FULL kb_chunk`` rewrites old ones).
* Extended statistics: an index version belongs to one tenant, so the planner's independent
  estimate of ``tenant_id = ? AND index_version_id = ? AND access_level <= ?`` was 100x too
  low; ``dependencies``/``mcv`` fix the estimate for plans search does not force.
"""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("kb", "0002_cross_table_tenant_constraints")]

    operations = [
        migrations.RunSQL(
            "ALTER TABLE kb_chunk ALTER COLUMN embedding SET STORAGE MAIN",
            "ALTER TABLE kb_chunk ALTER COLUMN embedding SET STORAGE EXTERNAL",
        ),
        migrations.RunSQL(
            "CREATE STATISTICS IF NOT EXISTS chunk_access_stats (dependencies, mcv) "
            "ON tenant_id, index_version_id, access_level FROM kb_chunk",
            "DROP STATISTICS IF EXISTS chunk_access_stats",
        ),
    ]
