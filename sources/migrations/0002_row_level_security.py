"""Row-level security on the sources' tables (as kb/0006), and the one lookup a worker needs before it
knows a sync's tenant: the tenant id of a sync, and nothing else."""

from django.db import migrations

TENANT = "NULLIF(current_setting('app.tenant_id', true), '')::bigint"
TABLES = ["sources_source", "sources_sourcesync", "sources_sourceitem"]

SYNC_TENANT = """
CREATE OR REPLACE FUNCTION bulkhead_source_sync_tenant(sync_id uuid) RETURNS bigint
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public AS $$
    SELECT tenant_id FROM public.sources_sourcesync WHERE id = sync_id
$$
"""


def enable_sql(table: str) -> str:
    return (
        f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY; "
        f"DROP POLICY IF EXISTS tenant_wall ON {table}; "
        f"CREATE POLICY tenant_wall ON {table} USING (tenant_id = {TENANT}) WITH CHECK (tenant_id = {TENANT})"
    )


def disable_sql(table: str) -> str:
    return f"DROP POLICY IF EXISTS tenant_wall ON {table}; ALTER TABLE {table} DISABLE ROW LEVEL SECURITY"


class Migration(migrations.Migration):
    dependencies = [("sources", "0001_initial"), ("kb", "0006_row_level_security")]

    operations = [
        migrations.RunSQL(SYNC_TENANT, "DROP FUNCTION IF EXISTS bulkhead_source_sync_tenant(uuid)"),
        *(migrations.RunSQL(enable_sql(table), disable_sql(table)) for table in TABLES),
    ]
