"""Slugs a tenant gave up, kept with its id, so that a tenant taking the slug later does not read the folders
left for the one before (``accounts.models.RetiredTenantSlug``; ``sources.listing.tenant_folders``).

A trigger on ``accounts_tenant`` records the slug of every tenant deleted, and the old slug of every tenant
renamed, whoever deletes or renames it (the Django admin, a script, raw SQL): the function runs as the owner
(``SECURITY DEFINER``), so it writes the row whatever login the change came from. The application's login has
no right on the table (revoked below); it asks one question, through ``bulkhead_tenant_slug_inherited``: did a
tenant other than the one holding this slug now ever hold it? Tenants deleted before this migration left no
row: their folders are the operator's to remove.
"""

import re

import django.db.models.functions.datetime
from django.conf import settings
from django.db import migrations, models

RETIRE = """
CREATE OR REPLACE FUNCTION bulkhead_tenant_slug_retire() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public AS $$
BEGIN
    IF TG_OP = 'DELETE' OR OLD.slug IS DISTINCT FROM NEW.slug THEN
        INSERT INTO public.accounts_retiredtenantslug (slug, tenant_id, retired_at) VALUES (OLD.slug, OLD.id, now());
    END IF;
    RETURN NULL;
END
$$;
DROP TRIGGER IF EXISTS bulkhead_tenant_slug_retire ON accounts_tenant;
CREATE TRIGGER bulkhead_tenant_slug_retire AFTER DELETE OR UPDATE OF slug ON accounts_tenant
    FOR EACH ROW EXECUTE FUNCTION bulkhead_tenant_slug_retire();
"""
UNRETIRE = """
DROP TRIGGER IF EXISTS bulkhead_tenant_slug_retire ON accounts_tenant;
DROP FUNCTION IF EXISTS bulkhead_tenant_slug_retire();
"""
# True when a tenant other than the one holding ``tenant_slug`` now gave it up before; nothing else.
INHERITED = """
CREATE OR REPLACE FUNCTION bulkhead_tenant_slug_inherited(tenant_slug text) RETURNS boolean
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public AS $$
    SELECT EXISTS (
        SELECT 1 FROM public.accounts_retiredtenantslug r
        WHERE r.slug = tenant_slug
          AND r.tenant_id IS DISTINCT FROM (SELECT t.id FROM public.accounts_tenant t WHERE t.slug = tenant_slug)
    )
$$
"""


def revoke_from_app_role(apps, schema_editor):
    role = getattr(settings, "BULKHEAD_APP_DB_ROLE", "")
    if not role:
        return  # one login for everything
    if not re.fullmatch(r"[a-z_][a-z0-9_]{0,62}", role):
        raise ValueError(f"the application's database role {role!r} must be a plain lower-case identifier")
    with schema_editor.connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [role])
        if cursor.fetchone():
            cursor.execute(f'REVOKE ALL ON accounts_retiredtenantslug FROM "{role}"')
            cursor.execute(f'REVOKE ALL ON SEQUENCE accounts_retiredtenantslug_id_seq FROM "{role}"')


class Migration(migrations.Migration):

    dependencies = [
        ('accounts', '0008_revoke_tokens_of_inactive_members'),
    ]

    operations = [
        migrations.CreateModel(
            name='RetiredTenantSlug',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('slug', models.CharField(db_index=True, max_length=63)),
                ('tenant_id', models.BigIntegerField()),
                ('retired_at', models.DateTimeField(db_default=django.db.models.functions.datetime.Now())),
            ],
        ),
        migrations.RunPython(revoke_from_app_role, migrations.RunPython.noop, elidable=False),
        migrations.RunSQL(RETIRE, UNRETIRE),
        migrations.RunSQL(INHERITED, "DROP FUNCTION IF EXISTS bulkhead_tenant_slug_inherited(text)"),
    ]
