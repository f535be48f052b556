"""Row-level security on the tenant-owned tables of accounts, and the application's login role.

The role (``settings.BULKHEAD_APP_DB_ROLE``, "bulkhead_app" unless the deployment names
another) is created or corrected here, by the owner that runs migrations: it may log in and
read and write rows (this table and every later one: default privileges), nothing more -- no
superuser, no BYPASSRLS, no DDL. Roles are per cluster, so this is idempotent.

A row is visible and writable when its tenant is the connection's ``app.tenant_id``; a
membership is also visible to its own user (``app.user_id``), so sign-in can list a person's
tenants before one is chosen. Unset is NULL: no rows (fail closed). The table owner (the
migrating role, the owner path) is not subject to the policies.
"""

import re

from django.conf import settings
from django.db import migrations

TENANT = "NULLIF(current_setting('app.tenant_id', true), '')::bigint"
USER = "NULLIF(current_setting('app.user_id', true), '')::bigint"

POLICIES = {
    "accounts_group": (f"tenant_id = {TENANT}", f"tenant_id = {TENANT}"),
    "accounts_membership": (f"tenant_id = {TENANT} OR user_id = {USER}", f"tenant_id = {TENANT}"),
    "accounts_groupmembership": (
        f"EXISTS (SELECT 1 FROM accounts_group g WHERE g.id = group_id AND g.tenant_id = {TENANT})",
        f"EXISTS (SELECT 1 FROM accounts_group g WHERE g.id = group_id AND g.tenant_id = {TENANT})",
    ),
    "accounts_apitoken": (
        f"EXISTS (SELECT 1 FROM accounts_membership m WHERE m.id = membership_id AND m.tenant_id = {TENANT})",
        f"EXISTS (SELECT 1 FROM accounts_membership m WHERE m.id = membership_id AND m.tenant_id = {TENANT})",
    ),
}

# Before a request knows its tenant it has only the token: this returns the token's tenant id,
# nothing else, past the wall (SECURITY DEFINER runs as the owner); the token is then read as that tenant.
TOKEN_TENANT = """
CREATE OR REPLACE FUNCTION bulkhead_token_tenant(token_hash text) RETURNS bigint
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public AS $$
    SELECT m.tenant_id FROM public.accounts_apitoken t JOIN public.accounts_membership m ON m.id = t.membership_id
    WHERE t.key_hash = token_hash AND t.revoked_at IS NULL AND m.is_active
$$
"""


def enable_sql(table: str, using: str, check: str) -> str:
    return (
        f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY; "
        f"DROP POLICY IF EXISTS tenant_wall ON {table}; "
        f"CREATE POLICY tenant_wall ON {table} USING ({using}) WITH CHECK ({check})"
    )


def disable_sql(table: str) -> str:
    return f"DROP POLICY IF EXISTS tenant_wall ON {table}; ALTER TABLE {table} DISABLE ROW LEVEL SECURITY"


def create_app_role(apps, schema_editor):
    role = getattr(settings, "BULKHEAD_APP_DB_ROLE", "")
    if not role:
        return  # one login for everything: no wall to build a role for
    if not re.fullmatch(r"[a-z_][a-z0-9_]{0,62}", role):
        raise ValueError(f"the application's database role {role!r} must be a plain lower-case identifier")
    password = getattr(settings, "BULKHEAD_APP_DB_PASSWORD", "") or None
    with schema_editor.connection.cursor() as cursor:
        cursor.execute("SELECT current_user")
        if cursor.fetchone()[0] == role:
            raise RuntimeError(
                f"migrations run as the application role {role!r}; run them as the owner "
                "(BULKHEAD_OWNER_DATABASE_URL; `manage.py migrate` uses it)"
            )
        cursor.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [role])
        verb = "ALTER" if cursor.fetchone() else "CREATE"
        cursor.execute(
            f'{verb} ROLE "{role}" LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE NOREPLICATION PASSWORD %s',
            [password],
        )
        for statement in (
            f'GRANT USAGE ON SCHEMA public TO "{role}"',
            f'GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO "{role}"',
            f'GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA public TO "{role}"',
            f'ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO "{role}"',
            f'ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT USAGE, SELECT, UPDATE ON SEQUENCES TO "{role}"',
        ):
            cursor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [("accounts", "0001_initial")]

    operations = [
        migrations.RunPython(create_app_role, migrations.RunPython.noop, elidable=False),
        migrations.RunSQL(TOKEN_TENANT, "DROP FUNCTION IF EXISTS bulkhead_token_tenant(text)"),
        *(
            migrations.RunSQL(enable_sql(table, using, check), disable_sql(table))
            for table, (using, check) in POLICIES.items()
        ),
    ]
