"""Who may do what, endpoint by endpoint, parametrized over actors; a refused call changes nothing.
And IDOR: another tenant's ids answer exactly like ids that do not exist."""

from __future__ import annotations

import uuid

import pytest

from accounts.models import ApiToken, Group, Tenant, User
from kb.models import IngestionJob
from tests.api_helpers import ACTORS, EMAILS, build_world, flag_head, snapshot

pytest_plugins = ["tests.api_fixtures"]  # the `world` fixture

pytestmark = pytest.mark.django_db

# Actors: anonymous, an admin of another tenant, an editor with public clearance (below
# every section of the document), a viewer (internal), an editor (confidential, no
# groups), an admin (restricted, security-team).
NEW_DOC = {"title": "New", "content": "# New\nHello there.", "content_type": "text/markdown"}


def _source(world):
    from sources.models import Source
    from tests.conftest import SOURCE_ROOT

    return Source.objects.get_or_create(tenant=world.tenant, name="wiki", defaults={
        "kind": "folder", "path": str(SOURCE_ROOT / world.tenant.slug)})[0]


NEW_SOURCE = {"kind": "folder", "name": "new", "path": "/"}  # refused (not below a root) only once allowed


def _job(world, **kw):
    fields = {"tenant": world.tenant, "document": world.doc, "created_by": world.actors["admin"].membership.user}
    fields.update(kw)
    return IngestionJob.objects.create(**fields)


def _token_of(world, actor):
    return ApiToken.objects.get(membership=world.actors[actor].membership)


# Calls that read only, whatever their method: they must change nothing even when allowed.
READ_ONLY = {"documents.preview"}

# name: (request builder, expected status per actor in ACTORS order)
CASES = {
    "documents.list": (lambda w: ("get", "/api/v1/documents/", None), [401, 200, 200, 200, 200, 200]),
    # The other tenant's admin creates in their own tenant; the public-clearance editor may
    # not set "internal"; viewers may not upload.
    "documents.create": (lambda w: ("post", "/api/v1/documents/", NEW_DOC), [401, 201, 403, 403, 201, 201]),
    # The access preview: the same rules as an upload, and it stores nothing even when allowed.
    "documents.preview": (lambda w: ("post", "/api/v1/documents/preview/", NEW_DOC), [401, 200, 403, 403, 200, 200]),
    "documents.get": (lambda w: ("get", f"/api/v1/documents/{w.doc.id}/", None), [401, 404, 404, 200, 200, 200]),
    "documents.sections": (
        lambda w: ("get", f"/api/v1/documents/{w.doc.id}/sections/", None), [401, 404, 404, 200, 200, 200]),
    # The confidential editor can see the document but not its restricted sections: 403.
    "documents.replace": (
        lambda w: ("put", f"/api/v1/documents/{w.doc.id}/", NEW_DOC), [401, 404, 404, 403, 403, 200]),
    "documents.delete": (
        lambda w: ("delete", f"/api/v1/documents/{w.doc.id}/", None), [401, 404, 404, 403, 403, 204]),
    "sections.patch.readable": (
        lambda w: ("patch", f"/api/v1/sections/{w.section_ids['intro']}/", {"access_level": "confidential"}),
        [401, 404, 404, 403, 200, 200]),
    "sections.patch.restricted": (
        lambda w: ("patch", f"/api/v1/sections/{w.section_ids['incident']}/", {"access_level": "confidential"}),
        [401, 404, 404, 403, 404, 200]),
    "sections.patch.above_clearance": (
        lambda w: ("patch", f"/api/v1/sections/{w.section_ids['intro']}/", {"access_level": "restricted"}),
        [401, 404, 404, 403, 403, 200]),
    # Effective access: admins of the tenant only (another tenant's admin: 404, as for a missing id).
    "documents.as_member": (
        lambda w: ("get", f"/api/v1/documents/{w.doc.id}/as/{w.actors['viewer'].membership.id}/", None),
        [401, 404, 403, 403, 403, 200]),
    "sections.readers": (
        lambda w: ("get", f"/api/v1/sections/{w.section_ids['incident']}/readers/", None),
        [401, 404, 403, 403, 403, 200]),
    # The document has sections above the viewer and the editor: a job of it they did not start is not theirs to see
    # (it would date a change to what they cannot read: docs/security.md, "Job times").
    "jobs.get.document": (lambda w: ("get", f"/api/v1/jobs/{_job(w).id}/", None), [401, 404, 404, 404, 404, 200]),
    "jobs.get.batch": (
        lambda w: ("get", f"/api/v1/jobs/{_job(w, document=None, kind='batch').id}/", None),
        [401, 404, 404, 404, 404, 200]),
    "groups.list": (lambda w: ("get", "/api/v1/groups/", None), [401, 200, 403, 403, 403, 200]),
    "groups.create": (lambda w: ("post", "/api/v1/groups/", {"slug": "legal"}), [401, 201, 403, 403, 403, 201]),
    "groups.patch": (
        lambda w: ("patch", f"/api/v1/groups/{Group.objects.get(tenant=w.tenant, slug='finance').id}/",
                   {"name": "Money"}),
        [401, 404, 403, 403, 403, 200]),
    "memberships.list": (lambda w: ("get", "/api/v1/memberships/", None), [401, 200, 403, 403, 403, 200]),
    "memberships.create": (
        lambda w: ("post", "/api/v1/memberships/", {"email": "new@example.com", "role": "viewer"}),
        [401, 202, 403, 403, 403, 202]),  # an invitation the person accepts
    "memberships.patch": (
        lambda w: ("patch", f"/api/v1/memberships/{w.actors['viewer'].membership.id}/", {"clearance": "restricted"}),
        [401, 404, 403, 403, 403, 200]),
    "tokens.list": (lambda w: ("get", "/api/v1/tokens/", None), [401, 200, 403, 403, 403, 200]),
    "tokens.create": (
        lambda w: ("post", "/api/v1/tokens/", {"membership_id": w.actors["viewer"].membership.id}),
        [401, 404, 403, 403, 403, 201]),
    "tokens.revoke": (
        lambda w: ("post", f"/api/v1/tokens/{_token_of(w, 'viewer').id}/revoke/", None),
        [401, 404, 403, 403, 403, 200]),
    # The audit trail: admins only, each of their own tenant (tests/test_audit.py: another tenant's
    # records are invisible to them, their ids in a filter find nothing).
    "audit.list": (lambda w: ("get", f"/api/v1/audit/?document={w.doc.id}", None), [401, 200, 403, 403, 403, 200]),
    "audit.export": (lambda w: ("get", "/api/v1/audit/export/?file=csv", None), [401, 200, 403, 403, 403, 200]),
    "audit.settings.get": (lambda w: ("get", "/api/v1/audit/settings/", None), [401, 200, 403, 403, 403, 200]),
    "audit.settings.patch": (
        lambda w: ("patch", "/api/v1/audit/settings/", {"retention_days": 90, "hash_queries": True}),
        [401, 200, 403, 403, 403, 200]),
    # Sources (issue 29): admins only; another tenant's admin gets a 404 for this tenant's source.
    "sources.list": (lambda w: ("get", "/api/v1/sources/", None), [401, 200, 403, 403, 403, 200]),
    "sources.create": (lambda w: ("post", "/api/v1/sources/", NEW_SOURCE), [401, 400, 403, 403, 403, 400]),
    "sources.get": (lambda w: ("get", f"/api/v1/sources/{_source(w).id}/", None), [401, 404, 403, 403, 403, 200]),
    "sources.patch": (
        lambda w: ("patch", f"/api/v1/sources/{_source(w).id}/", {"exclude": ["*.tmp"]}), [401, 404, 403, 403, 403, 200]),
    "sources.sync": (lambda w: ("post", f"/api/v1/sources/{_source(w).id}/sync/", None), [401, 404, 403, 403, 403, 202]),
    "sources.syncs": (lambda w: ("get", f"/api/v1/sources/{_source(w).id}/syncs/", None), [401, 404, 403, 403, 403, 200]),
    "sources.delete": (lambda w: ("delete", f"/api/v1/sources/{_source(w).id}/", None), [401, 404, 403, 403, 403, 204]),
    # Screening (issue 24): the mode and the review queue are the admins'; a chunk to review is one of
    # the admin's own tenant they may read (another tenant's admin: the same 404 as a made-up id).
    "screening.settings.get": (lambda w: ("get", "/api/v1/settings/screening/", None), [401, 200, 403, 403, 403, 200]),
    "screening.settings.patch": (
        lambda w: ("patch", "/api/v1/settings/screening/", {"screening": "flag"}), [401, 200, 403, 403, 403, 200]),
    "review.list": (lambda w: ("get", "/api/v1/review/", None), [401, 200, 403, 403, 403, 200]),
    "review.get": (lambda w: ("get", f"/api/v1/review/{_flagged_chunk(w)}/", None), [401, 404, 403, 403, 403, 200]),
    "review.decide": (
        lambda w: ("post", f"/api/v1/review/{_flagged_chunk(w)}/", {"decision": "release"}),
        [401, 404, 403, 403, 403, 200]),
    # A section's flagged head (in no chunk): the same rule as a chunk's.
    "review.head.get": (lambda w: ("get", f"/api/v1/review/heads/{flag_head(w.section_ids['intro'])}/", None),
                        [401, 404, 403, 403, 403, 200]),
    "review.head.decide": (
        lambda w: ("post", f"/api/v1/review/heads/{flag_head(w.section_ids['intro'])}/", {"decision": "release"}),
        [401, 404, 403, 403, 403, 200]),
}


def _flagged_chunk(world):
    """The chunk of the document's intro, flagged as the detector would have flagged it."""
    from kb.models import Chunk

    chunk = Chunk.objects.get(section_id=world.section_ids["intro"])
    Chunk.objects.filter(pk=chunk.pk).update(
        screening_flagged=True, screening={"flagged": True, "score": 1.0, "reasons": ["override"],
                                           "detector": "test", "spans": [[0, 5]]})
    return chunk.pk


@pytest.fixture
def world(module_world, db):
    return module_world


@pytest.fixture(scope="module")
def module_world(django_db_setup, django_db_blocker):
    """``tests.api_fixtures.world``, built once for this module's ~240 tests (committed, removed after them):
    each test runs in a transaction of its own that is rolled back (``django_db``), so every test meets the
    world as it was built -- a deleted document, a revoked token, a new member are gone again for the next."""
    with django_db_blocker.unblock():
        world = build_world()
        yield world
        Tenant.objects.filter(pk__in=[world.tenant.pk, world.other.pk]).delete()
        User.objects.filter(email__in=EMAILS).delete()


@pytest.mark.parametrize("actor", ACTORS)
@pytest.mark.parametrize("case", sorted(CASES))
def test_authorization_matrix(world, case, actor):
    build, expected = CASES[case]
    method, url, body = build(world)
    before = snapshot()
    response = getattr(world.client(actor), method)(url, body, format="json")
    assert response.status_code == expected[ACTORS.index(actor)], response.content
    if response.status_code >= 400:
        assert set(response.json()) == {"error"}
        assert set(response.json()["error"]) == {"code", "message", "details"}
        assert snapshot() == before, "a refused call changed the database"
    elif case in READ_ONLY:
        assert snapshot() == before, "a read-only call changed the database"
    elif method != "get":
        assert snapshot() != before


def test_search_requires_authentication(world):
    response = world.client("anonymous").post("/api/v1/search/", {"query": "policy"}, format="json")
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "not_authenticated"
    assert response["WWW-Authenticate"] == "Token"


def test_invalid_or_revoked_token_is_401(world):
    client = world.client("viewer")
    client.credentials(HTTP_AUTHORIZATION="Token bkh_nothing_here")
    assert client.get("/api/v1/documents/").status_code == 401
    token = _token_of(world, "viewer")
    world.client("admin").post(f"/api/v1/tokens/{token.id}/revoke/")
    response = world.client("viewer").get("/api/v1/documents/")
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "authentication_failed"


def test_deactivated_membership_token_is_401(world):
    viewer = world.actors["viewer"].membership
    world.client("admin").patch(f"/api/v1/memberships/{viewer.id}/", {"is_active": False}, format="json")
    assert world.client("viewer").get("/api/v1/documents/").status_code == 401


# ----------------------------------------------------------------------------- IDOR


def _foreign_ids(world):
    """One id of each kind from the other tenant, and the endpoints that take it."""
    other = world.other
    job = IngestionJob.objects.create(tenant=other, document=world.other_doc)
    group = Group.objects.get(tenant=other, slug="security-team")
    membership = world.actors["other_tenant"].membership
    token = ApiToken.objects.get(membership=membership)
    section = world.other_doc.section_ids["intro"]
    return [
        ("get", "/api/v1/documents/{}/", world.other_doc.id, None),
        ("put", "/api/v1/documents/{}/", world.other_doc.id, NEW_DOC),
        ("delete", "/api/v1/documents/{}/", world.other_doc.id, None),
        ("get", "/api/v1/documents/{}/sections/", world.other_doc.id, None),
        ("patch", "/api/v1/sections/{}/", section, {"access_level": "public"}),
        ("get", "/api/v1/jobs/{}/", job.id, None),
        ("patch", "/api/v1/groups/{}/", group.id, {"name": "x"}),
        ("patch", "/api/v1/memberships/{}/", membership.id, {"role": "viewer"}),
        ("post", "/api/v1/tokens/{}/revoke/", token.id, None),
    ]


def _missing(foreign_id):
    return uuid.uuid4() if isinstance(foreign_id, uuid.UUID) else 2**62


def test_ids_of_another_tenant_answer_like_missing_ids(world):
    admin = world.client("admin")
    for method, template, foreign_id, body in _foreign_ids(world):
        before = snapshot()
        foreign = getattr(admin, method)(template.format(foreign_id), body, format="json")
        assert snapshot() == before
        missing = getattr(admin, method)(template.format(_missing(foreign_id)), body, format="json")
        malformed = getattr(admin, method)(template.format("not-an-id"), body, format="json")
        overflowing = getattr(admin, method)(template.format("9" * 40), body, format="json")
        assert foreign.status_code == missing.status_code == malformed.status_code == 404, template
        assert foreign.content == missing.content == malformed.content == overflowing.content, template


def test_unreadable_ids_answer_like_missing_ids(world):
    """A section or document the caller may not read is indistinguishable from a missing one."""
    editor = world.client("editor")  # confidential, not in security-team
    unreadable = editor.patch(f"/api/v1/sections/{world.section_ids['incident']}/", {"inherit": True}, format="json")
    missing = editor.patch(f"/api/v1/sections/{uuid.uuid4()}/", {"inherit": True}, format="json")
    assert unreadable.status_code == missing.status_code == 404
    assert unreadable.content == missing.content
    low = world.client("low_clearance")
    for suffix in ("", "sections/"):
        hidden = low.get(f"/api/v1/documents/{world.doc.id}/{suffix}")
        absent = low.get(f"/api/v1/documents/{uuid.uuid4()}/{suffix}")
        assert hidden.status_code == absent.status_code == 404
        assert hidden.content == absent.content
