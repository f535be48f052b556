"""The audit trail is append-only in the database, and expiry is its one narrow way out.

* ``audit_event_guard`` refuses every UPDATE, and every DELETE except of a row older than its
  tenant's retention *and* made from inside ``audit_expire`` (which sets a transaction-local
  flag). A forgotten cascade, an admin action or a stray ORM ``delete()`` fails instead.
* ``audit_event_no_truncate`` refuses TRUNCATE (``manage.py flush`` included). The test
  database alone sets ``bulkhead.audit_truncate = 'allowed'`` (tests/conftest.py), so that
  pytest-django can empty it between transactional tests.
* ``audit_event_query_text`` blanks a search's text when the tenant keeps only its hash: the
  tenant's choice holds whatever code inserts the row.
* ``audit_expire(batch)`` is SECURITY DEFINER (it runs as the table's owner, with a fixed
  search_path): once the application connects as a role that does not own the tables, that role
  is granted INSERT and SELECT on ``audit_event`` and EXECUTE on this function -- and nothing
  that could change or remove a row (docs/security.md, "The audit trail").
"""

from django.db import migrations

FORWARD = """
CREATE FUNCTION audit_retention_days(tenant bigint) RETURNS integer
LANGUAGE sql STABLE AS $$
    SELECT coalesce((SELECT retention_days FROM audit_settings WHERE tenant_id = tenant), 365)
$$;

CREATE FUNCTION audit_event_guard() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'TRUNCATE' THEN
        IF current_setting('bulkhead.audit_truncate', true) = 'allowed' THEN
            RETURN NULL;
        END IF;
        RAISE EXCEPTION 'audit records are append-only: TRUNCATE refused'
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF TG_OP = 'DELETE'
       AND current_setting('bulkhead.audit_expiring', true) = 'on'
       AND OLD.created_at < now() - make_interval(days => audit_retention_days(OLD.tenant_id)) THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION 'audit records are append-only: % refused (only audit_expire deletes, and only expired rows)', TG_OP
        USING ERRCODE = 'insufficient_privilege';
END;
$$;

CREATE TRIGGER audit_event_append_only BEFORE UPDATE OR DELETE ON audit_event
    FOR EACH ROW EXECUTE FUNCTION audit_event_guard();
CREATE TRIGGER audit_event_no_truncate BEFORE TRUNCATE ON audit_event
    FOR EACH STATEMENT EXECUTE FUNCTION audit_event_guard();

CREATE FUNCTION audit_event_query_text() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.query_text <> '' AND EXISTS (
        SELECT 1 FROM audit_settings WHERE tenant_id = NEW.tenant_id AND hash_queries
    ) THEN
        NEW.query_text := '';
    END IF;
    RETURN NEW;
END;
$$;

CREATE TRIGGER audit_event_query_text BEFORE INSERT ON audit_event
    FOR EACH ROW EXECUTE FUNCTION audit_event_query_text();

CREATE FUNCTION audit_expire(batch integer) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
    removed integer;
BEGIN
    PERFORM set_config('bulkhead.audit_expiring', 'on', true);
    DELETE FROM audit_event WHERE id IN (
        SELECT e.id FROM audit_event e
        WHERE e.created_at < now() - make_interval(days => 30)  -- the least retention (a BRIN range)
          AND e.created_at < now() - make_interval(days => audit_retention_days(e.tenant_id))
        ORDER BY e.id
        LIMIT greatest(batch, 1)
    );
    GET DIAGNOSTICS removed = ROW_COUNT;
    PERFORM set_config('bulkhead.audit_expiring', '', true);
    RETURN removed;
END;
$$;
REVOKE ALL ON FUNCTION audit_expire(integer) FROM PUBLIC;
"""

BACKWARD = """
DROP FUNCTION audit_expire(integer);
DROP TRIGGER audit_event_query_text ON audit_event;
DROP FUNCTION audit_event_query_text();
DROP TRIGGER audit_event_no_truncate ON audit_event;
DROP TRIGGER audit_event_append_only ON audit_event;
DROP FUNCTION audit_event_guard();
DROP FUNCTION audit_retention_days(bigint);
"""


class Migration(migrations.Migration):
    dependencies = [("audit", "0001_initial")]

    operations = [migrations.RunSQL(FORWARD, BACKWARD)]
