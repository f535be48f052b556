"""The audit trail (#16): what a search, a policy change and a token revocation leave behind; that
nobody changes or removes a record (the database refuses); that expiry removes only what is past
each tenant's retention; that a locked or failing audit table never fails a search; that one
tenant's admins never see another's records; and that a tenant keeping only hashes keeps no text."""

from __future__ import annotations

import contextlib
import json
import logging
from datetime import timedelta

import pytest
from django.conf import settings as django_settings
from django.db import DatabaseError, connection, connections, transaction
from django.utils import timezone

from accounts.models import ApiToken
from audit.models import AuditEvent, AuditSettings
from audit.services import audit_expire, audit_settings_update, query_hash
from tests.api_helpers import console_client

pytest_plugins = ["tests.api_fixtures"]

SEARCH = {"query": "internal readers", "mode": "keyword", "expand": "parent"}


def _records(world, actor="admin", **filters) -> list[dict]:
    response = world.client(actor).get("/api/v1/audit/", {"limit": 500, **filters})
    assert response.status_code == 200, response.content
    return response.json()["results"]


@pytest.mark.django_db
def test_a_search_a_patch_and_a_revocation_each_leave_their_record(world):
    admin = world.actors["admin"].membership
    client = world.client("admin")
    found = client.post("/api/v1/search/", SEARCH, format="json").json()
    assert found["results"]
    intro = world.section_ids["intro"]
    patched = client.patch(f"/api/v1/sections/{intro}/", {"access_level": "confidential"}, format="json")
    assert patched.status_code == 200
    token = ApiToken.objects.get(membership=world.actors["viewer"].membership)
    assert client.post(f"/api/v1/tokens/{token.pk}/revoke/").status_code == 200

    mine = _records(world, member=admin.pk)
    [search] = [r for r in mine if r["action"] == "search"]
    assert search["membership_id"] == admin.pk and search["actor_email"] == "admin@example.com"
    assert search["chunk_ids"] == [hit["chunk_id"] for hit in found["results"]]
    assert set(search["section_ids"]) == ({hit["section_id"] for hit in found["results"]}
                                          | {context["section_id"] for context in found["contexts"]})
    assert search["document_ids"] == [str(world.doc.pk)]
    assert search["index_version_id"] == found["index_version_id"]
    assert (search["query_text"], search["mode"]) == (SEARCH["query"], "keyword")
    assert search["query_hash"] == query_hash(tenant_id=world.tenant.pk, query=SEARCH["query"])
    assert search["latency_ms"] > 0

    [change] = _records(world, action="section.access")
    assert (change["target_type"], change["target_id"], change["membership_id"]) == ("section", str(intro), admin.pk)
    assert change["document_ids"] == [str(world.doc.pk)]
    assert change["details"]["before"]["own"] == {"level": "internal", "groups": []}
    assert change["details"]["after"]["own"] == {"level": "confidential", "groups": []}

    [revoked] = _records(world, action="token.revoke")
    assert (revoked["target_type"], revoked["target_id"], revoked["membership_id"]) == ("token", str(token.pk), admin.pk)
    assert revoked["details"]["before"]["prefix"] == token.prefix
    client.post(f"/api/v1/tokens/{token.pk}/revoke/")  # idempotent: nothing new happened, nothing recorded
    assert len(_records(world, action="token.revoke")) == 1

    # The document's filter ("who retrieved this"): the search that returned it and the change of it.
    assert {r["action"] for r in _records(world, document=str(world.doc.pk))} >= {"search", "section.access"}
    later = (timezone.now() + timedelta(minutes=1)).isoformat()
    assert _records(world, since=later) == []
    assert len(_records(world, until=later)) == len(_records(world))

    exported = client.get("/api/v1/audit/export/", {"file": "jsonl", "action": "search"})
    assert exported.status_code == 200 and exported["Content-Type"] == "application/x-ndjson"
    lines = [json.loads(line) for line in b"".join(exported.streaming_content).decode().splitlines()]
    assert [line["chunk_ids"] for line in lines] == [search["chunk_ids"]]
    exported = client.get("/api/v1/audit/export/", {"file": "csv", "action": "token.revoke"})
    rows = b"".join(exported.streaming_content).decode().splitlines()
    assert rows[0].startswith("id,created_at,action,") and len(rows) == 2 and f",token,{token.pk}," in rows[1]


@pytest.mark.django_db
def test_another_tenants_records_are_invisible(world):
    world.client("admin").post("/api/v1/search/", SEARCH, format="json")
    world.client("admin").get(f"/api/v1/documents/{world.doc.pk}/sections/")
    theirs = _records(world, "other_tenant")
    assert theirs and {r["membership_id"] for r in theirs} <= {world.actors["other_tenant"].membership.pk, None}
    mine = {r["id"] for r in _records(world)}
    assert mine and not mine & {r["id"] for r in theirs}
    # Ids of the other tenant in a filter answer as if nothing matched (as made-up ids do).
    assert _records(world, "other_tenant", document=str(world.doc.pk)) == []
    assert _records(world, "other_tenant", member=world.actors["admin"].membership.pk) == []
    exported = world.client("other_tenant").get("/api/v1/audit/export/", {"file": "csv",
                                                                         "document": str(world.doc.pk)})
    assert len(b"".join(exported.streaming_content).decode().splitlines()) == 1  # the header alone


@pytest.mark.django_db
def test_a_tenant_that_keeps_only_hashes_keeps_no_query_text(world):
    admin = world.actors["admin"].membership
    audit_settings_update(actor=admin, hash_queries=True)
    assert world.client("admin").post("/api/v1/search/", SEARCH, format="json").status_code == 200
    [search] = _records(world, action="search")
    assert search["query_text"] == ""
    assert search["query_hash"] == query_hash(tenant_id=world.tenant.pk, query=SEARCH["query"])
    # The database enforces the tenant's choice, whatever code inserts the row.
    AuditEvent.objects.create(tenant_id=world.tenant.pk, action="search", query_text="typed by hand")
    assert not AuditEvent.objects.filter(query_text="typed by hand").exists()
    [change] = _records(world, action="audit.settings")
    assert change["details"] == {"before": {"retention_days": 365, "hash_queries": False},
                                 "after": {"retention_days": 365, "hash_queries": True}}


@pytest.mark.django_db
def test_the_database_refuses_to_change_or_remove_a_record(world):
    event = AuditEvent.objects.filter(tenant_id=world.tenant.pk).first()
    attempts = [
        lambda: AuditEvent.objects.filter(pk=event.pk).update(actor_email="someone@else"),
        lambda: AuditEvent.objects.filter(pk=event.pk).delete(),
        lambda: _sql("DELETE FROM audit_event"),
        # Even the expiry's own flag does not let a DELETE of a recent row through.
        lambda: _sql("SELECT set_config('bulkhead.audit_expiring', 'on', true); DELETE FROM audit_event"),
        # The test database allows TRUNCATE (tests/conftest.py); without that, as in production, it is refused.
        lambda: _sql("SET LOCAL bulkhead.audit_truncate = ''; TRUNCATE audit_event"),
    ]
    for attempt in attempts:
        with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
            attempt()
    assert AuditEvent.objects.get(pk=event.pk).actor_email == event.actor_email


def _sql(statement: str) -> None:
    with connection.cursor() as cursor:
        cursor.execute(statement)


@pytest.mark.django_db
def test_expiry_removes_only_records_past_their_tenants_retention(world):
    admin = world.actors["admin"].membership
    audit_settings_update(actor=admin, retention_days=30)  # the other tenant keeps the default, 365 days
    now = timezone.now()
    ages = {"acme-recent": (world.tenant.pk, 29), "acme-old": (world.tenant.pk, 31),
            "globex-old": (world.other.pk, 31), "globex-older": (world.other.pk, 366), "no-tenant": (None, 366)}
    for name, (tenant_id, days) in ages.items():
        AuditEvent.objects.create(tenant_id=tenant_id, action="sign_in.failed", actor_email=name,
                                  created_at=now - timedelta(days=days))
    assert audit_expire(batch=1) == 3  # a batch at a time, until none is left
    kept = set(AuditEvent.objects.filter(actor_email__in=ages).values_list("actor_email", flat=True))
    assert kept == {"acme-recent", "globex-old"}
    assert AuditSettings.objects.get(tenant_id=world.tenant.pk).retention_days == 30
    schedule = {entry["task"] for entry in django_settings.CELERY_BEAT_SCHEDULE.values()}
    assert "audit.tasks.expire_audit_records" in schedule


@pytest.mark.django_db(transaction=True)
def test_a_locked_or_failing_audit_table_never_fails_a_search(world, caplog, settings):
    """Really blocked (another session holds the table) and really failing (an insert trigger raising
    disk_full): the search answers 200 with its results and the audit logs a warning."""
    settings.BULKHEAD_AUDIT_READ_TIMEOUT_MS = 100
    client = world.client("viewer")
    holder = connections.create_connection("default")
    try:
        holder.set_autocommit(False)
        with holder.cursor() as cursor:
            cursor.execute("LOCK TABLE audit_event IN ACCESS EXCLUSIVE MODE")
        with caplog.at_level(logging.WARNING, logger="audit.services"):
            locked = client.post("/api/v1/search/", SEARCH, format="json")
    finally:
        holder.rollback()
        holder.close()
    assert locked.status_code == 200 and locked.json()["results"]
    assert any("search record" in r.getMessage() and "timeout" in r.getMessage() for r in caplog.records)
    assert not AuditEvent.objects.filter(action="search").exists()

    caplog.clear()
    _sql("""CREATE FUNCTION audit_test_full() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN RAISE EXCEPTION 'could not extend file: No space left on device' USING ERRCODE = 'disk_full'; END $$;
            CREATE TRIGGER audit_test_full BEFORE INSERT ON audit_event FOR EACH ROW EXECUTE FUNCTION audit_test_full();""")
    try:
        with caplog.at_level(logging.WARNING, logger="audit.services"):
            full = client.post("/api/v1/search/", SEARCH, format="json")
    finally:
        _sql("DROP TRIGGER audit_test_full ON audit_event; DROP FUNCTION audit_test_full();")
    assert full.status_code == 200 and full.json()["results"]
    assert any("No space left" in r.getMessage() for r in caplog.records)
    assert not AuditEvent.objects.filter(action="search").exists()

    assert client.post("/api/v1/search/", SEARCH, format="json").status_code == 200
    assert AuditEvent.objects.filter(action="search").count() == 1  # and recorded once the table is back


@contextlib.contextmanager
def _search_served_by_wsgi(world):
    """A viewer's search through Django's WSGI handler as a WSGI server drives it: the response
    (not yet closed) and the status line. As Django's test client does, the test's connection keeps
    its transaction across the request."""
    from django.core.handlers.wsgi import WSGIHandler
    from django.core.signals import request_finished, request_started
    from django.db import close_old_connections
    from django.test import RequestFactory

    environ = RequestFactory().post(
        "/api/v1/search/", json.dumps(SEARCH), content_type="application/json",
        HTTP_AUTHORIZATION=f"Token {world.actors['viewer'].key}",
    ).environ
    statuses = []
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        yield WSGIHandler()(environ, lambda status, headers, *exc: statuses.append(status)), statuses
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)


@pytest.mark.django_db
def test_a_search_is_recorded_once_its_answer_has_been_sent(world):
    """The member never waits for the record (audit.middleware): served as a WSGI server serves it,
    the answer is complete before anything is written, and the record is there once the server
    closes the response."""
    with _search_served_by_wsgi(world) as (response, statuses):
        body = b"".join(response)
        assert statuses == ["200 OK"] and json.loads(body)["results"]
        assert not AuditEvent.objects.filter(action="search").exists()  # answered, not yet recorded
        response.close()
    [record] = AuditEvent.objects.filter(action="search")
    assert record.membership_id == world.actors["viewer"].membership.pk and record.query_text == SEARCH["query"]


@pytest.mark.django_db
def test_a_client_that_hangs_up_before_reading_the_answer_is_recorded_all_the_same(world):
    """A member cannot keep a search out of the trail by dropping the connection: the server then
    closes the response without sending it (gunicorn closes it in a ``finally``), and closing is
    what writes the record."""
    with _search_served_by_wsgi(world) as (response, statuses):
        assert statuses == ["200 OK"]
        response.close()  # nothing of the body was read
    assert AuditEvent.objects.filter(action="search", membership_id=world.actors["viewer"].membership.pk).count() == 1


@pytest.mark.django_db
def test_inside_a_transaction_a_failing_record_rolls_back_alone(world, caplog):
    """Within a caller's transaction (here the test's): the record's savepoint rolls back, the
    transaction goes on, and the caller's timeouts are as they were."""
    _sql("SET LOCAL lock_timeout = '7s'")
    _sql("SET LOCAL synchronous_commit = 'on'")  # whatever the server's default (the test folder's is off)
    assert world.client("admin").post("/api/v1/search/", SEARCH, format="json").status_code == 200
    assert AuditEvent.objects.filter(action="search").count() == 1
    _sql("""CREATE FUNCTION audit_test_full() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN RAISE EXCEPTION 'No space left on device' USING ERRCODE = 'disk_full'; END $$;
            CREATE TRIGGER audit_test_full BEFORE INSERT ON audit_event FOR EACH ROW EXECUTE FUNCTION audit_test_full();""")
    with caplog.at_level(logging.WARNING, logger="audit.services"):
        assert world.client("admin").post("/api/v1/search/", SEARCH, format="json").status_code == 200
    assert any("No space left" in r.getMessage() for r in caplog.records)
    assert AuditEvent.objects.filter(action="search").count() == 1  # the transaction is still usable
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_setting('lock_timeout'), current_setting('synchronous_commit')")
        assert cursor.fetchone() == ("7s", "on")


@pytest.mark.django_db
def test_an_admin_changes_retention_and_hashing_in_the_console_and_the_change_is_recorded(world):
    admin = world.actors["admin"].membership
    client = console_client(admin)
    page = client.get("/audit/settings/")
    assert page.status_code == 200 and b'id="current-retention">365 days' in page.content
    # Out of bounds: refused beside the field, nothing stored.
    refused = client.post("/audit/settings/", {"retention_days": "5"})
    assert refused.status_code == 400 and b"greater than or equal to 30" in refused.content
    assert not AuditSettings.objects.filter(tenant_id=admin.tenant_id).exists()
    saved = client.post("/audit/settings/", {"retention_days": "400", "hash_queries": "on"})
    assert saved.status_code == 302
    stored = AuditSettings.objects.get(tenant_id=admin.tenant_id)
    assert (stored.retention_days, stored.hash_queries) == (400, True)
    assert b'id="current-retention">400 days' in client.get("/audit/settings/").content
    (change,) = _records(world, action="audit.settings")
    assert change["details"] == {"before": {"retention_days": 365, "hash_queries": False},
                                 "after": {"retention_days": 400, "hash_queries": True}}


def test_the_consoles_trail_keeps_its_filter_from_page_to_page(world):
    admin = world.actors["admin"].membership
    AuditEvent.objects.bulk_create(
        [AuditEvent(tenant_id=admin.tenant_id, action="sign_in", actor_email=f"n{i}@example.com") for i in range(55)]
        + [AuditEvent(tenant_id=admin.tenant_id, action="group.update", actor_email="g@example.com")]
    )
    signed_in = AuditEvent.objects.filter(tenant_id=admin.tenant_id, action="sign_in").count()
    client = console_client(admin)
    first = client.get("/audit/?action=sign_in").content.decode()
    assert '<a href="?action=sign_in&amp;page=2" id="next-page">Older →</a>' in first
    assert 'id="previous-page"' not in first and f"page 1 of 2 · {signed_in} records" in first
    second = client.get("/audit/?action=sign_in&page=2").content.decode()
    assert '<a href="?action=sign_in&amp;page=1" id="previous-page">← Newer</a>' in second
    assert 'id="next-page"' not in second and f"page 2 of 2 · {signed_in} records" in second
    # A log of one page still says how many records it holds.
    assert "page 1 of 1 · 1 record<" in client.get("/audit/?action=group.update").content.decode()


def test_a_sign_in_is_recorded_only_in_the_tenant_the_person_enters(db):
    """One tenant does not learn when a member it shares with another works there; a failed sign-in
    goes to every tenant the account can still reach."""
    from django.test import Client

    from accounts.passwords import user_set_password
    from accounts.services import membership_create, membership_update, tenant_create

    password = "a long enough pass phrase 7"
    a, b, c = (tenant_create(slug=f"enter-{x}", name=f"Tenant {x}") for x in "abc")
    membership_create(tenant=a, email="both@example.com", role="viewer", clearance="public")
    in_b = membership_create(tenant=b, email="both@example.com", role="viewer", clearance="public")
    membership_update(membership=membership_create(tenant=c, email="both@example.com", role="viewer",
                                                   clearance="public"), is_active=False)
    membership_create(tenant=c, email="only@example.com", role="viewer", clearance="public")
    user_set_password(email="both@example.com", password=password)
    user_set_password(email="only@example.com", password=password)

    def trail(tenant, action="sign_in"):
        return [e["address"] for e in AuditEvent.objects.filter(tenant_id=tenant.pk, action=action).values_list(
            "details", flat=True)]

    client = Client(REMOTE_ADDR="203.0.113.9")
    client.post("/sign-in/", {"username": "both@example.com", "password": "not it"})
    assert trail(a, "sign_in.failed") == trail(b, "sign_in.failed") == ["203.0.113.9"]
    assert trail(c, "sign_in.failed") == []  # deactivated there
    assert client.post("/sign-in/", {"username": "both@example.com", "password": password}).status_code == 302
    assert client.get("/").status_code == 302  # two tenants: the person chooses first
    assert trail(a) == trail(b) == []
    assert client.post("/tenant/", {"membership": in_b.pk}).status_code == 302
    assert client.get("/").status_code == 200
    assert trail(b) == ["203.0.113.9"] and trail(a) == [] and trail(c) == []
    # The only tenant of a person is entered at sign-in, and recorded there once.
    single = Client(REMOTE_ADDR="198.51.100.4")
    single.post("/sign-in/", {"username": "only@example.com", "password": password})
    assert single.get("/").status_code == 200 and single.get("/").status_code == 200
    assert trail(c) == ["198.51.100.4"]
