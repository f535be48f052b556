"""Array containment (``document_ids @> ARRAY[id]``, ``pg_catalog.arraycontains``) marked LEAKPROOF,
so that "who retrieved this document" uses the audit trail's GIN index under row-level security.

PostgreSQL lets an index scan apply a query's condition before a table's policy only when the
condition's function is LEAKPROOF (otherwise it could run on another tenant's rows first and leak
them through an error). ``arraycontains`` is not marked so, and the document filter read and tested
every record of the tenant instead (``tests/test_tenant_wall.py``). It returns true or false and has
no side effect; the errors it can raise depend on the arrays' element types (no equality operator,
different element types), never on the values -- for the element types of this schema (uuid,
bigint, varchar), whose equality is itself LEAKPROOF. Marking a function is a superuser's right: an
owner that is not one gets a notice and the slower plan, as with text search's match (kb/0006;
docs/security.md)."""

from django.db import migrations

FORWARD = """
DO $$
BEGIN
    IF (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
        ALTER FUNCTION pg_catalog.arraycontains(anyarray, anyarray) LEAKPROOF;
    ELSE
        RAISE NOTICE 'not a superuser: arraycontains stays NOT LEAKPROOF, the audit trail''s document filter under RLS cannot use its GIN index';
    END IF;
END $$
"""

BACKWARD = """
DO $$
BEGIN
    IF (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
        ALTER FUNCTION pg_catalog.arraycontains(anyarray, anyarray) NOT LEAKPROOF;
    END IF;
END $$
"""


class Migration(migrations.Migration):
    dependencies = [("audit", "0003_row_level_security")]

    operations = [migrations.RunSQL(FORWARD, BACKWARD)]
