"""The tenant wall in the database (row-level security) holds on its own.

Queries here carry no tenant filter at all -- the application's filter deliberately removed --
and run as the application's role with one tenant set: the other tenant's rows still do not come
back, none come back with no tenant set, and the other tenant's rows cannot be written. The last
tests check that a tenant set by one request or task never applies to the next.
"""

from __future__ import annotations

import contextlib
import re
import uuid
from datetime import timedelta
from pathlib import Path

import psycopg
import pytest
from celery import shared_task
from django.conf import settings
from django.core.signals import request_finished
from django.db import DatabaseError, connection, transaction
from django.http import HttpResponse
from django.test import RequestFactory
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from accounts.models import (
    ApiToken,
    Group,
    GroupMembership,
    Invitation,
    Membership,
    ScimToken,
    SsoConfig,
    SsoIdentity,
)
from accounts.scim import _hash as scim_hash
from accounts.scim import scim_token_create
from accounts.services import api_token_create, group_create, membership_create, membership_set_groups, tenant_create
from accounts.tenancy import (
    acting_user_activate,
    current_tenant_id,
    owner_path,
    tenant_activate,
    tenant_activate_for_scim_token,
    tenant_activate_for_token,
    tenant_context_known_clear,
    tenant_context_reset,
    token_tenant_id,
)
from audit.models import AuditEvent, AuditSettings
from bulkhead.embedded_services import database_env
from bulkhead.middleware import TenantContextMiddleware
from kb.jobs import job_tenant_ids
from kb.models import (
    EMBEDDING_DIMENSIONS,
    Chunk,
    Document,
    EmbeddingCacheEntry,
    IndexVersion,
    IngestionJob,
    ScreeningSettings,
    Section,
    SectionGone,
)
from sources.models import Source, SourceItem, SourceSync
from tests import factories

# Every tenant-owned table, by model.
TENANT_MODELS = [Group, Membership, GroupMembership, ApiToken, Document, IndexVersion, Section, Chunk,
                 EmbeddingCacheEntry, IngestionJob, AuditEvent, AuditSettings, Invitation,
                 ScimToken, SsoConfig, SsoIdentity, Source, SourceSync, SourceItem, ScreeningSettings, SectionGone]


def _tenant(slug: str):
    tenant = tenant_create(slug=slug, name=slug)
    group = group_create(tenant=tenant, slug="team")
    member = membership_create(tenant=tenant, email=f"{slug}@example.com", role="admin", clearance="restricted")
    membership_set_groups(membership=member, groups=[group])
    _, key = api_token_create(membership=member, name="key")
    document = factories.document(tenant, text=f"{slug} secret text")
    version = factories.index_version(tenant)
    section = factories.section(document)
    factories.chunk(section, version)
    EmbeddingCacheEntry.objects.create(
        tenant=tenant, access_level=1, model="m", content_hash=uuid.uuid4().hex, embedding=[0.1] * EMBEDDING_DIMENSIONS
    )
    IngestionJob.objects.create(tenant=tenant, document=document)
    SectionGone.objects.create(tenant=tenant, document=document, access_level=1, gone_at=timezone.now())
    AuditEvent.objects.create(tenant_id=tenant.pk, action="sign_in", actor_email=f"{slug}@example.com")
    AuditSettings.objects.get_or_create(tenant_id=tenant.pk)
    ScreeningSettings.objects.get_or_create(tenant_id=tenant.pk)
    Invitation.objects.create(tenant=tenant, email=f"new@{slug}.example", key_hash=uuid.uuid4().hex,
                              expires_at=timezone.now() + timedelta(days=1))
    ScimToken.objects.create(tenant=tenant, prefix="p", key_hash=uuid.uuid4().hex)
    SsoConfig.objects.create(tenant=tenant, issuer=f"https://{slug}.example", client_id=slug, enabled=slug == "wall-a")
    SsoIdentity.objects.create(tenant=tenant, issuer=f"https://{slug}.example", subject="1", membership=member)
    source = Source.objects.create(tenant=tenant, name="wiki", kind="folder", path="/srv/wiki")
    SourceSync.objects.create(tenant=tenant, source=source)
    SourceItem.objects.create(tenant=tenant, source=source, path="a.md", document=document, content_hash="0" * 64,
                              access_level=1)
    return tenant, member, key


def _ids(model) -> set:
    return set(model.objects.values_list("pk", flat=True))


@contextlib.contextmanager
def application_role():
    """This connection as the application's role (as every request is), then back to the owner."""
    with connection.cursor() as cursor:
        cursor.execute(f'SET ROLE "{settings.BULKHEAD_APP_DB_ROLE}"')
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute("RESET ROLE")


def _of_tenant(model, tenant) -> set:
    where = {"group__tenant": tenant} if model is GroupMembership else (
        {"membership__tenant": tenant} if model is ApiToken else {"tenant_id": tenant.pk}
    )
    return set(model.objects.filter(**where).values_list("pk", flat=True))


@pytest.fixture
def two_tenants(db):
    """Two tenants with a row in every tenant-owned table, and each one's ids (read as the owner)."""
    a = _tenant("wall-a")
    b = _tenant("wall-b")
    rows = {tenant.pk: {model: _of_tenant(model, tenant) for model in TENANT_MODELS} for tenant, *_ in (a, b)}
    return a, b, rows


def test_the_application_role_cannot_bypass_the_wall(db):
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT rolsuper, rolbypassrls FROM pg_roles WHERE rolname = %s", [settings.BULKHEAD_APP_DB_ROLE]
        )
        assert cursor.fetchone() == (False, False)
        cursor.execute("SELECT relname FROM pg_class WHERE relname = ANY(%s) AND relrowsecurity",
                       [[model._meta.db_table for model in TENANT_MODELS]])
        assert sorted(r[0] for r in cursor.fetchall()) == sorted(model._meta.db_table for model in TENANT_MODELS)


def test_unfiltered_queries_return_only_the_acting_tenants_rows(two_tenants):
    (a, _, _), (b, _, _), rows = two_tenants
    assert all(rows[a.pk][model] and rows[b.pk][model] for model in TENANT_MODELS)
    with application_role():
        tenant_activate(a.pk)
        for model in TENANT_MODELS:
            assert _ids(model) == rows[a.pk][model], model.__name__
        tenant_activate(b.pk)
        for model in TENANT_MODELS:
            assert _ids(model) == rows[b.pk][model], model.__name__
        # The search's own query, with the application's tenant and access filter removed.
        tenant_activate(a.pk)
        assert {c.tenant_id for c in Chunk.objects.order_by("id")} == {a.pk}
        assert "wall-b" not in " ".join(Document.objects.values_list("text", flat=True))


def test_no_tenant_set_means_no_rows(two_tenants):
    with application_role():
        tenant_context_reset()
        for model in TENANT_MODELS:
            assert _ids(model) == set(), model.__name__
        tenant_activate(None)
        assert Chunk.objects.count() == 0


def test_another_tenants_rows_cannot_be_written(two_tenants):
    (a, _, _), (b, _, _), rows = two_tenants
    b_document = Document.objects.get(pk=next(iter(rows[b.pk][Document])))
    with application_role():
        tenant_activate(a.pk)
        # Updates and deletes of B's rows find nothing to change.
        assert Document.objects.filter(pk=b_document.pk).update(title="taken") == 0
        assert Chunk.objects.filter(tenant_id=b.pk).delete()[0] == 0
        # A new row of B's, or one of A's moved to B, is refused by the policy's check.
        for write in (
            lambda: factories.document(b, text="planted"),
            lambda: Document.objects.filter(tenant_id=a.pk).update(tenant_id=b.pk),
        ):
            with pytest.raises(DatabaseError, match="row-level security"), transaction.atomic():
                write()
    assert Document.objects.get(pk=b_document.pk).title == b_document.title
    assert Chunk.objects.filter(tenant_id=b.pk).count() == len(rows[b.pk][Chunk])


def test_a_user_sees_their_own_memberships_in_every_tenant_and_no_one_elses(two_tenants):
    (a, a_member, _), (b, _, _), _ = two_tenants
    mine_in_b = membership_create(tenant=b, email=a_member.user.email, role="viewer", clearance="public")
    with application_role():
        tenant_context_reset()
        acting_user_activate(a_member.user_id)
        assert _ids(Membership) == {a_member.pk, mine_in_b.pk}
        assert _ids(Group) == set() and _ids(ApiToken) == set()  # nothing else of either tenant


def test_the_lookups_before_a_tenant_return_a_tenant_id_and_nothing_else(two_tenants):
    (a, _, a_key), (b, _, _), rows = two_tenants
    job_b = next(iter(rows[b.pk][IngestionJob]))
    from accounts.services import _hash_key

    with application_role():
        tenant_context_reset()
        assert token_tenant_id(_hash_key(a_key)) == a.pk
        assert token_tenant_id(_hash_key(a_key + "x")) is None
        assert current_tenant_id() is None
        # The lookup that also acts for the token's tenant (a request's one round trip for both).
        assert tenant_activate_for_token(_hash_key(a_key)) == a.pk and current_tenant_id() == a.pk
        assert tenant_activate_for_token(_hash_key(a_key + "x")) is None and current_tenant_id() is None
        assert job_tenant_ids([job_b, uuid.uuid4()]) == {b.pk: [str(job_b)]}
        assert _ids(ApiToken) == set() and _ids(IngestionJob) == set()


def test_the_invitation_and_scim_lookups_return_a_tenant_id_alone(two_tenants):
    (a, _, _), (b, _, _), _ = two_tenants
    pending, = Invitation.objects.filter(tenant=a).values_list("key_hash", flat=True)
    used = Invitation.objects.create(tenant=b, email="used@b.example", key_hash=uuid.uuid4().hex,
                                     expires_at=timezone.now() + timedelta(days=1), accepted_at=timezone.now())
    expired = Invitation.objects.create(tenant=b, email="old@b.example", key_hash=uuid.uuid4().hex,
                                        expires_at=timezone.now() - timedelta(seconds=1))
    scim_b, _ = scim_token_create(tenant=b, name="idp")
    revoked, _ = scim_token_create(tenant=b, name="old")
    ScimToken.objects.filter(pk=revoked.pk).update(revoked_at=timezone.now())
    with application_role():
        tenant_context_reset()
        with connection.cursor() as cursor:
            found = []
            for key_hash in (pending, used.key_hash, expired.key_hash, "x"):
                cursor.execute("SELECT bulkhead_invitation_tenant(%s)", [key_hash])
                found.append(cursor.fetchone()[0])
        assert found == [a.pk, None, None, None]
        assert current_tenant_id() is None and _ids(Invitation) == set()
        # A SCIM token's lookup: its tenant id alone, acted for in the same statement.
        assert tenant_activate_for_scim_token(scim_b.key_hash) == b.pk and current_tenant_id() == b.pk
        assert tenant_activate_for_scim_token(revoked.key_hash) is None and current_tenant_id() is None
        assert tenant_activate_for_scim_token(scim_hash("bks_x_y")) is None
        # Whether any tenant offers single sign-on: a boolean, nothing of which tenant.
        with connection.cursor() as cursor:
            cursor.execute("SELECT bulkhead_sso_offered()")
            assert cursor.fetchone()[0] is True and _ids(SsoConfig) == set()


def test_the_owner_path_sees_every_tenant(two_tenants):
    (a, _, _), (b, _, _), rows = two_tenants
    with owner_path():
        assert {a.pk, b.pk} <= set(Document.objects.values_list("tenant_id", flat=True))


@pytest.mark.django_db(transaction=True)
def test_the_application_login_itself_is_held_by_the_wall():
    """Over the application's own login (not a role switch): what every process of the deployment uses."""
    (a, _, _), (b, _, _) = _tenant("login-a"), _tenant("login-b")
    with psycopg.connect(database_env()["DATABASE_URL"], autocommit=True) as app:
        assert app.execute("SELECT current_user").fetchone()[0] == settings.BULKHEAD_APP_DB_ROLE
        assert app.execute("SELECT count(*) FROM kb_chunk").fetchone()[0] == 0
        app.execute("SELECT set_config('app.tenant_id', %s, false)", [str(a.pk)])
        tenants = {r[0] for r in app.execute("SELECT tenant_id FROM kb_document").fetchall()}
        assert tenants == {a.pk}
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            app.execute("INSERT INTO accounts_group (tenant_id, slug, name) VALUES (%s, 'x', 'x')", [b.pk])
        with pytest.raises(psycopg.errors.InsufficientPrivilege):  # nor can it take the wall down
            app.execute("ALTER TABLE kb_chunk DISABLE ROW LEVEL SECURITY")


# ----------------------------------------------------------------------------- no leftover tenant


def test_a_request_starts_and_ends_acting_for_no_tenant(two_tenants, client):
    (a, _, a_key), (b, _, b_key), _ = two_tenants
    seen = []

    def view(request):
        seen.append(current_tenant_id())
        from django.http import HttpResponse

        return HttpResponse()

    tenant_activate(a.pk)  # left over by a previous request on this persistent connection
    TenantContextMiddleware(view)(RequestFactory().get("/"))
    assert seen == [None]
    # And through the whole stack: B's token acts for B during the request, for no one after it.
    response = client.get("/api/v1/documents/", HTTP_AUTHORIZATION=f"Token {b_key}")
    assert response.status_code == 200
    assert {d["title"] for d in response.json()["results"]} == set(Document.objects.filter(tenant=b).values_list(
        "title", flat=True))
    assert current_tenant_id() is None


def _settings_now() -> tuple[str, str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_setting('app.tenant_id', true), current_setting('app.user_id', true)")
        return tuple(value or "" for value in cursor.fetchone())


def _serve(seen: list) -> None:
    """One request through the tenant middleware, ended as a server ends it (``request_finished``)."""
    def view(request):
        seen.append(_settings_now())
        return HttpResponse()

    TenantContextMiddleware(view)(RequestFactory().get("/"))
    request_finished.send(sender=None)


def _sets_at_the_start(seen: list) -> list[str]:
    with CaptureQueriesContext(connection) as queries:
        _serve(seen)
    before_view = []
    for query in queries.captured_queries:
        if "current_setting('app.tenant_id', true), current_setting('app.user_id', true)" in query["sql"]:
            break
        before_view.append(query["sql"])
    return [sql for sql in before_view if "set_config" in sql]


@pytest.mark.django_db(transaction=True)
def test_the_clear_at_a_requests_start_is_skipped_only_after_a_clear_that_held():
    seen: list = []
    tenant_activate(7)
    assert len(_sets_at_the_start(seen)) == 1  # left over: cleared first
    assert _sets_at_the_start(seen) == []  # the last request's clear at its end held: skipped
    assert tenant_context_known_clear()

    acting_user_activate(8)  # anything set since, even the user alone
    assert len(_sets_at_the_start(seen)) == 1
    # A clear inside a transaction that rolls back is undone (the session setting comes back).
    tenant_activate(9)
    with contextlib.suppress(RuntimeError), transaction.atomic():
        tenant_context_reset()
        raise RuntimeError("rolled back")
    assert current_tenant_id() == 9 and not tenant_context_known_clear()
    assert len(_sets_at_the_start(seen)) == 1
    # The tenant set by the token lookup's own statement.
    tenant_context_reset()
    tenant_activate_for_token("no such token")
    assert not tenant_context_known_clear()
    assert len(_sets_at_the_start(seen)) == 1
    # A new connection starts with nothing set.
    tenant_activate(10)
    connection.close()
    assert tenant_context_known_clear() and _sets_at_the_start(seen) == []
    assert seen == [("", "")] * 6


@pytest.mark.django_db(transaction=True)
def test_an_api_request_sets_its_tenant_once_and_clears_it_once_after_the_answer(client):
    """Through the whole stack, on a connection the previous request left clear: no clear at the
    start, the token's lookup acts for its tenant in the same statement, one clear at the end."""
    tenant, _, key = _tenant("wall-one-trip")
    statements = []
    for _ in range(2):
        with CaptureQueriesContext(connection) as queries:
            response = client.get("/api/v1/documents/", HTTP_AUTHORIZATION=f"Token {key}")
        assert response.status_code == 200 and {d["title"] for d in response.json()["results"]} == set(
            Document.objects.filter(tenant=tenant).values_list("title", flat=True))
        statements = [q["sql"] for q in queries.captured_queries if "'app." in q["sql"]]
    assert len(statements) == 2, statements
    assert "bulkhead_token_tenant" in statements[0]
    assert statements[1] == "SELECT set_config('app.tenant_id', '', false), set_config('app.user_id', '', false)"
    assert current_tenant_id() is None and tenant_context_known_clear()


# What may happen on a thread's connection between two requests.
_STEPS = st.sampled_from([
    "set tenant", "set user", "set no tenant", "clear", "clear, rolled back", "set, rolled back",
    "clear, committed in a transaction", "token lookup", "unknown token lookup", "close", "request", "request",
])


@pytest.fixture
def live_token_hash(transactional_db) -> str:
    from accounts.services import _hash_key

    return _hash_key(_tenant("wall-token")[2])


@hypothesis_settings(max_examples=60, deadline=None, derandomize=True, database=None,
                     suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(_STEPS, max_size=14))
def test_every_request_starts_acting_for_no_one_whatever_came_before(live_token_hash, steps):
    def rolled_back(step):
        with contextlib.suppress(RuntimeError), transaction.atomic():
            step()
            raise RuntimeError("rolled back")

    actions = {
        "set tenant": lambda: tenant_activate(3), "set user": lambda: acting_user_activate(4),
        "set no tenant": lambda: tenant_activate(None), "clear": tenant_context_reset,
        "clear, rolled back": lambda: rolled_back(tenant_context_reset),
        "set, rolled back": lambda: rolled_back(lambda: tenant_activate(5)),
        "clear, committed in a transaction": lambda: transaction.atomic()(tenant_context_reset)(),
        "token lookup": lambda: tenant_activate_for_token(live_token_hash),
        "unknown token lookup": lambda: tenant_activate_for_token("not a token's hash"),
        "close": connection.close, "request": lambda: _serve(seen),
    }
    tenant_activate(6)  # what an earlier example may have left
    seen: list = []
    for step in [*steps, "request"]:
        actions[step]()
        assert not seen or seen[-1] == ("", ""), steps
    assert _settings_now() == ("", "")


# A session-wide setting of the acting tenant or user, written out in SQL.
_SESSION_SET = re.compile(r"set_config\(\s*'app\.\w+'\s*,[^;]*?,\s*false\s*\)|\bSET\s+(SESSION\s+)?app\.", re.I)


def test_only_the_tenancy_module_sets_who_a_session_acts_for():
    """The clear at a request's start is skipped on what ``accounts.tenancy`` knows of the
    connection, so nothing else may set these settings for the session (a transaction's own
    ``set_config(..., true)``, as the audit's read records do, ends with it)."""
    root = Path(__file__).resolve().parent.parent
    sources = [path for folder in ("accounts", "audit", "kb", "pipeline", "console", "bulkhead", "bench", "ingestion")
               for path in (root / folder).rglob("*.py")]
    assert len(sources) > 100
    setters = sorted(str(path.relative_to(root)) for path in sources if _SESSION_SET.search(path.read_text()))
    assert setters == []
    assert _SESSION_SET.search("cursor.execute(\"SELECT set_config('app.tenant_id', %s, false)\", [tenant])")
    assert _SESSION_SET.search("SET app.tenant_id = 4")
    assert not _SESSION_SET.search("set_config('app.tenant_id', %s, true)")


@shared_task(name="tests.tenant_wall.report_tenant")
def report_tenant() -> int | None:
    return current_tenant_id()


def test_a_task_starts_and_ends_acting_for_no_tenant(two_tenants):
    (a, _, _), _, _ = two_tenants
    tenant_activate(a.pk)  # left over by the previous task of this pool process
    assert report_tenant.apply().get() is None
    tenant_activate(a.pk)
    report_tenant.apply()
    assert current_tenant_id() is None


def test_migrations_create_the_application_role_where_none_exists(db, settings):
    """docker-compose's shape: no role until the migrations (as the owner) create it, with the
    password of DATABASE_URL; run again, they leave it as it is. (Roles are transactional: the
    test's rollback removes it.)"""
    import importlib
    from types import SimpleNamespace

    migration = importlib.import_module("accounts.migrations.0002_row_level_security")
    settings.BULKHEAD_APP_DB_ROLE = "bulkhead_app_compose_check"
    settings.BULKHEAD_APP_DB_PASSWORD = "from-database-url"
    for _ in range(2):
        migration.create_app_role(None, SimpleNamespace(connection=connection))
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT rolcanlogin, rolsuper, rolbypassrls, rolcreatedb, rolcreaterole, rolpassword IS NOT NULL "
            "FROM pg_authid WHERE rolname = %s", [settings.BULKHEAD_APP_DB_ROLE]
        )
        assert cursor.fetchone() == (True, False, False, False, False, True)
        cursor.execute(
            "SELECT has_table_privilege(%s, 'kb_chunk', 'SELECT, INSERT, UPDATE, DELETE'), "
            "has_table_privilege(%s, 'kb_chunk', 'TRUNCATE'), has_schema_privilege(%s, 'public', 'CREATE')",
            [settings.BULKHEAD_APP_DB_ROLE] * 3,
        )
        assert cursor.fetchone() == (True, False, False)


def test_search_plans_under_the_wall_still_use_their_indexes(two_tenants):
    """The policy is one equality the planner merges with the query's own tenant condition: the HNSW
    scans (shared, and the tenant's partial index) and the keyword side's GIN index are still chosen
    for the application's role -- the last only because text search's match is LEAKPROOF (kb/0006)."""
    import numpy as np
    from django.contrib.postgres.search import SearchQuery

    from accounts.selectors import reader_for
    from kb import retrieval, tenant_indexes

    (a, a_member, _), _, rows = two_tenants
    version = IndexVersion.objects.get(pk=next(iter(rows[a.pk][IndexVersion])))
    section = Section.objects.get(pk=next(iter(rows[a.pk][Section])))
    rng = np.random.default_rng(5)
    Chunk.objects.bulk_create([
        factories.chunk(section, version, save=False, ordinal=i + 1, embedding=list(v))
        for i, v in enumerate(rng.normal(size=(300, EMBEDDING_DIMENSIONS)))
    ])
    vector = list(rng.normal(size=EMBEDDING_DIMENSIONS))
    reader = reader_for(a_member)

    with connection.cursor() as cursor:
        cursor.execute("ANALYZE kb_chunk")

    def plans() -> tuple[str, str]:
        qs = retrieval.readable_chunks(reader, version.pk, retrieval.SearchFilters())
        with retrieval.local_settings(**retrieval.hnsw_settings(20)):
            vector_plan = retrieval.nearest(qs, vector, 20).explain()
        # A word no chunk holds: the GIN index is the cheap way, when it may be used.
        with retrieval.local_settings(enable_seqscan="off", enable_indexscan="off"):
            keyword_plan = qs.filter(search_vector=SearchQuery("zebra", config="english")).explain()
        return vector_plan, keyword_plan

    with application_role():
        tenant_activate(a.pk)
        vector_plan, keyword_plan = plans()
    assert "chunk_embedding_hnsw" in vector_plan
    assert "chunk_search_vector_gin" in keyword_plan
    with connection.cursor() as cursor:  # as PostgreSQL ships it (the test's transaction rolls this back)
        cursor.execute("ALTER FUNCTION pg_catalog.ts_match_vq(tsvector, tsquery) NOT LEAKPROOF")
    with application_role():
        tenant_activate(a.pk)
        assert "chunk_search_vector_gin" not in plans()[1]
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # the rows' deferred checks, before the index DDL
    tenant_indexes.tenant_index_build(tenant_id=a.pk)  # in the test's transaction: not concurrent
    with application_role():
        tenant_activate(a.pk)
        vector_plan, _ = plans()
    assert tenant_indexes.index_name(a.pk) in vector_plan


def test_the_audit_trails_document_filter_uses_its_index_under_the_wall(two_tenants):
    """"Who retrieved this document" filters the audit records by ``document_ids @> [id]``. Under the
    wall the planner may use the GIN index for it only if array containment is LEAKPROOF
    (audit/0004); otherwise it reads every record of the tenant and tests each one."""
    from audit.selectors import audit_list

    (a, _, _), _, _ = two_tenants
    documents = [uuid.uuid4() for _ in range(400)]
    AuditEvent.objects.bulk_create([
        AuditEvent(tenant_id=a.pk, action="search", document_ids=[documents[i % 400], documents[(i + 1) % 400]])
        for i in range(4000)
    ])
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE audit_event")

    def plan() -> str:
        from kb.retrieval import local_settings

        wanted = audit_list(tenant_id=a.pk, document_id=documents[7])
        assert len(wanted) == 20  # and the answer itself is right: the 10 records per document, twice
        # A table this small is cheapest read whole; the question is whether the index may be used.
        with local_settings(enable_seqscan="off"):
            return wanted.explain()

    with application_role():
        tenant_activate(a.pk)
        assert "audit_event_documents" in plan()
    with connection.cursor() as cursor:  # as PostgreSQL ships it (the test's transaction rolls this back)
        cursor.execute("ALTER FUNCTION pg_catalog.arraycontains(anyarray, anyarray) NOT LEAKPROOF")
    with application_role():
        tenant_activate(a.pk)
        assert "audit_event_documents" not in plan()


def test_a_read_record_written_after_its_request_passes_the_wall_on_its_own(two_tenants):
    """A request's read records are written after its answer (audit.middleware), when the request has
    already cleared its tenant: each record sets its own tenant for its own statement, so the
    application's role may still add it -- for that tenant only."""
    from audit.services import audit_reads_defer, audit_reads_flush, audit_record_read

    (a, a_member, _), _, _ = two_tenants
    with application_role():
        tenant_activate(a.pk)
        audit_reads_defer()
        audit_record_read(action="document.read", actor=a_member, target_type="document", target_id="after")
        tenant_context_reset()  # the request has ended: acting for no tenant
        assert audit_reads_flush() == 1
        assert current_tenant_id() is None  # and the record's tenant did not stay behind
    assert AuditEvent.objects.filter(tenant_id=a.pk, action="document.read", target_id="after").count() == 1
