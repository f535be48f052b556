"""Keep tenant columns honest across tables, in the database itself.

Composite foreign keys make ``chunk.tenant == document.tenant == section.tenant ==
index_version.tenant`` impossible to violate; a trigger keeps a group membership
inside one tenant.
"""

from django.db import migrations

COMPOSITE_FKS = [
    ("kb_section", "section_document_same_tenant", "document_id", "kb_document"),
    ("kb_chunk", "chunk_document_same_tenant", "document_id", "kb_document"),
    ("kb_chunk", "chunk_section_same_tenant", "section_id", "kb_section"),
    ("kb_chunk", "chunk_version_same_tenant", "index_version_id", "kb_indexversion"),
]

FORWARD = [
    f"ALTER TABLE {table} ADD CONSTRAINT {name} FOREIGN KEY ({column}, tenant_id) "
    f"REFERENCES {target} (id, tenant_id) ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED;"
    for table, name, column, target in COMPOSITE_FKS
]
BACKWARD = [f"ALTER TABLE {table} DROP CONSTRAINT {name};" for table, name, _, _ in COMPOSITE_FKS]

GROUP_TRIGGER = """
CREATE FUNCTION accounts_groupmembership_same_tenant() RETURNS trigger AS $$
BEGIN
    IF (SELECT tenant_id FROM accounts_membership WHERE id = NEW.membership_id)
       IS DISTINCT FROM (SELECT tenant_id FROM accounts_group WHERE id = NEW.group_id) THEN
        RAISE EXCEPTION 'group and membership belong to different tenants'
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER groupmembership_same_tenant BEFORE INSERT OR UPDATE ON accounts_groupmembership
    FOR EACH ROW EXECUTE FUNCTION accounts_groupmembership_same_tenant();
"""
GROUP_TRIGGER_DROP = """
DROP TRIGGER IF EXISTS groupmembership_same_tenant ON accounts_groupmembership;
DROP FUNCTION IF EXISTS accounts_groupmembership_same_tenant();
"""


class Migration(migrations.Migration):
    dependencies = [("kb", "0001_initial"), ("accounts", "0001_initial")]

    operations = [
        migrations.RunSQL(FORWARD, BACKWARD),
        migrations.RunSQL(GROUP_TRIGGER, GROUP_TRIGGER_DROP),
    ]
