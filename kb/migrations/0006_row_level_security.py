"""Row-level security on the knowledge base's tables: a row is visible and writable only when
its tenant is the connection's ``app.tenant_id`` (unset: no rows). See accounts/0002, which
creates the application's role and its grants."""

from django.db import migrations

TENANT = "NULLIF(current_setting('app.tenant_id', true), '')::bigint"
TABLES = ["kb_indexversion", "kb_document", "kb_section", "kb_chunk", "kb_embeddingcacheentry", "kb_ingestionjob"]

# A worker gets job ids from the broker and must learn their tenant before it may read the job:
# the job's tenant id and nothing else, past the wall (SECURITY DEFINER runs as the owner).
JOB_TENANT = """
CREATE OR REPLACE FUNCTION bulkhead_job_tenant(job_id uuid) RETURNS bigint
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public AS $$
    SELECT tenant_id FROM public.kb_ingestionjob WHERE id = job_id
$$
"""


# Under row-level security PostgreSQL uses a query's condition in an index scan only when its function
# is LEAKPROOF (else the condition could be evaluated on another tenant's rows before the policy and leak
# them through an error). Text search's match (`search_vector @@ query`, ts_match_vq) is not marked so,
# which took the keyword side off its GIN index: a bitmap scan of the tenant's whole version, filtered
# row by row (63 ms instead of 0.4 ms on 10,000 rows). It raises no error that depends on the row and has
# no side effect, so it is marked LEAKPROOF -- a superuser's right; an owner that is not one gets a
# notice and the slower plan (docs/security.md).
TS_MATCH_LEAKPROOF = """
DO $$
BEGIN
    IF (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
        ALTER FUNCTION pg_catalog.ts_match_vq(tsvector, tsquery) LEAKPROOF;
    ELSE
        RAISE NOTICE 'not a superuser: ts_match_vq stays NOT LEAKPROOF, keyword search under RLS cannot use its GIN index';
    END IF;
END $$
"""
TS_MATCH_NOT_LEAKPROOF = """
DO $$
BEGIN
    IF (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
        ALTER FUNCTION pg_catalog.ts_match_vq(tsvector, tsquery) NOT LEAKPROOF;
    END IF;
END $$
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
    dependencies = [("kb", "0005_embedding_cache_per_tenant_and_policy"), ("accounts", "0002_row_level_security")]

    operations = [
        migrations.RunSQL(JOB_TENANT, "DROP FUNCTION IF EXISTS bulkhead_job_tenant(uuid)"),
        migrations.RunSQL(TS_MATCH_LEAKPROOF, TS_MATCH_NOT_LEAKPROOF),
        *(migrations.RunSQL(enable_sql(table), disable_sql(table)) for table in TABLES),
    ]
