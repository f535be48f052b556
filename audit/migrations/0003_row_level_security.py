"""Row-level security on the audit trail: a tenant's records and settings are visible only to a
connection acting for that tenant (``app.tenant_id``; unset: none), as every other tenant-owned
table (accounts/0002, kb/0006). A record of no tenant (a failed sign-in of an unknown e-mail) may be
written by anyone and read by no tenant. The application's role may add and read records, never
change or remove one (the triggers refuse it too); expiry goes through ``audit_expire``, which runs
as the owner."""

import re

from django.conf import settings
from django.db import migrations

TENANT = "NULLIF(current_setting('app.tenant_id', true), '')::bigint"

FORWARD = f"""
ALTER TABLE audit_event ENABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS tenant_wall_read ON audit_event;
CREATE POLICY tenant_wall_read ON audit_event FOR SELECT USING (tenant_id = {TENANT});
DROP POLICY IF EXISTS tenant_wall_insert ON audit_event;
CREATE POLICY tenant_wall_insert ON audit_event FOR INSERT WITH CHECK (tenant_id = {TENANT} OR tenant_id IS NULL);
ALTER TABLE audit_settings ENABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS tenant_wall ON audit_settings;
CREATE POLICY tenant_wall ON audit_settings USING (tenant_id = {TENANT}) WITH CHECK (tenant_id = {TENANT});
"""

BACKWARD = """
DROP POLICY IF EXISTS tenant_wall_read ON audit_event;
DROP POLICY IF EXISTS tenant_wall_insert ON audit_event;
ALTER TABLE audit_event DISABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS tenant_wall ON audit_settings;
ALTER TABLE audit_settings DISABLE ROW LEVEL SECURITY;
"""


def application_role_grants(apps, schema_editor):
    role = getattr(settings, "BULKHEAD_APP_DB_ROLE", "")
    if not role:
        return
    if not re.fullmatch(r"[a-z_][a-z0-9_]{0,62}", role):
        raise ValueError(f"the application's database role {role!r} must be a plain lower-case identifier")
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(f'REVOKE UPDATE, DELETE, TRUNCATE ON audit_event FROM "{role}"')
        cursor.execute(f'GRANT SELECT, INSERT ON audit_event TO "{role}"')
        cursor.execute(f'GRANT SELECT, INSERT, UPDATE ON audit_settings TO "{role}"')
        cursor.execute(f'GRANT EXECUTE ON FUNCTION audit_expire(integer) TO "{role}"')


class Migration(migrations.Migration):
    dependencies = [("audit", "0002_append_only"), ("accounts", "0002_row_level_security")]

    operations = [
        migrations.RunSQL(FORWARD, BACKWARD),
        migrations.RunPython(application_role_grants, migrations.RunPython.noop, elidable=False),
    ]
