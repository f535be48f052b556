"""The web console's authorization matrix: every route of ``console/urls.py`` x every actor.

Each route is requested by GET and, where it changes state, by POST with the form data its
view expects and a real CSRF token (``Client(enforce_csrf_checks=True)``, the token taken from
the cookie a rendered page sets). Per actor -- anonymous, an admin of another tenant, an editor
with public clearance, a viewer, an editor (confidential), an admin (restricted, security-team)
-- the status is pinned, and so is whether the database changed: a GET never changes anything, a
refused POST changes nothing, an allowed one changes what it should. Another tenant's ids, and
ids a member may not see, answer exactly like made-up ids (same status, same page).

A route added to ``console/urls.py`` without an entry here fails
``test_every_console_route_is_in_the_matrix``. Each actor's requests run in a savepoint that
is rolled back, so every actor meets the same world.
"""

from __future__ import annotations

import copy
import json
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import transaction
from django.test import Client
from django.urls import URLPattern, reverse
from django.utils.http import urlsafe_base64_encode

from accounts.invitations import invitation_create, password_tokens_count
from accounts.models import ApiToken, Group, Invitation, Membership, ScimToken, SsoConfig, User
from accounts.passwords import user_set_password
from accounts.policy import AccessLevel
from accounts.scim import scim_token_create
from console import urls as console_urls
from console.forms import IndexVersionForm
from console.membership import SESSION_KEY
from ingestion.chunking.config import ChunkingConfig
from kb import index_versions
from kb.models import Chunk, Document, IndexVersion, IngestionJob
from kb.services import SOURCE_ID, SOURCE_PATH
from sources.models import Source, SourceDetached, SourceItem
from tests import factories
from tests.api_helpers import ACTORS, TableDigests, flag_head, snapshot_parts
from tests.conftest import SOURCE_ROOT

pytest_plugins = ["tests.api_fixtures"]  # the `world` fixture

pytestmark = pytest.mark.django_db

PASSWORD = "correct horse battery staple"
NEW_PASSWORD = "another horse battery staple"
MEMBERS = ACTORS[1:]  # everyone who can sign in


def _console_parts() -> dict:
    return {
        **snapshot_parts(),
        "index_versions": IndexVersion.objects.values_list("id", "tenant_id", "is_active", "status", "name"),
        "users": User.objects.values_list("id", "email", "password", "is_active"),
        # Beside the snapshot's invitations (their role, clearance and groups), under a name of its own.
        "invitation_ends": Invitation.objects.values_list("id", "tenant_id", "email", "revoked_at", "accepted_at"),
        "scim_tokens": ScimToken.objects.values_list("id", "tenant_id", "revoked_at"),
        "sso": SsoConfig.objects.values_list("tenant_id", "enabled", "issuer", "client_id", "updated_at"),
        "detached_paths": SourceDetached.objects.values_list("id", "tenant_id", "source_id", "path"),
    }


_console_snapshot = TableDigests(_console_parts)


def console_snapshot() -> dict:
    """``tests.api_helpers.snapshot`` and what only the console can change too: index versions
    (created, activated), users' passwords, invitations, SCIM tokens, SSO, sources' detached paths."""
    return _console_snapshot()


# ----------------------------------------------------------------------------- the world


@dataclass
class ConsoleWorld:
    """``tests.api_fixtures.world`` and the rows the console's pages take ids of."""

    api: object
    job: IngestionJob  # failed, of the document, created by the admin
    batch: IngestionJob  # a batch job created by the admin (no document)
    active: IndexVersion
    shadow: IndexVersion  # not active, never built
    foreign: dict[str, list]  # kind -> ids of the other tenant
    synced: Document  # a document the tenant's source "wiki" synced (internal), to detach

    def __getattr__(self, name):
        return getattr(self.api, name)

    def membership(self, actor: str) -> Membership | None:
        return self.api.actors[actor].membership


def _flag(chunk: Chunk):
    """Flag ``chunk`` as the detector would (the review queue's routes take its id)."""
    Chunk.objects.filter(pk=chunk.pk).update(
        screening_flagged=True, screening={"flagged": True, "score": 1.0, "reasons": ["override"], "detector": "test",
                                           "spans": [[0, 5]]})
    return chunk.pk


@pytest.fixture
def cworld(world, settings) -> ConsoleWorld:
    # Passwords are set and checked many times here; the default hasher is slow on purpose.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    for actor in MEMBERS:
        user_set_password(email=world.actors[actor].membership.user.email, password=PASSWORD)
    admin_user = world.actors["admin"].membership.user
    job = IngestionJob.objects.create(
        tenant=world.tenant, document=world.doc, created_by=admin_user, status=IngestionJob.Status.FAILED,
        error="line 1: unknown group 'nobody'",
    )
    batch = IngestionJob.objects.create(tenant=world.tenant, kind=IngestionJob.Kind.BATCH, created_by=admin_user)
    active = index_versions.index_version_active(tenant=world.tenant)
    shadow, _ = index_versions.index_version_create(
        tenant=world.tenant, config=ChunkingConfig(target_tokens=128), name="shadow"
    )
    other = world.other
    other_admin = world.actors["other_tenant"].membership
    # A version's short id is a prefix of its configuration's hash, the same in every tenant that has
    # the configuration: another tenant's own short id names its version there. Only a configuration
    # of that tenant alone, or a full uuid, is an id of the other tenant's.
    other_only, _ = index_versions.index_version_create(tenant=other, config=ChunkingConfig(target_tokens=100))
    settings.BULKHEAD_PUBLIC_URL = "http://testserver"
    invitation_create(tenant=world.tenant, email="invited@example.com", role="viewer", clearance="internal",
                      actor=world.actors["admin"].membership)
    other_invitation = invitation_create(tenant=other, email="theirs@example.com", role="viewer",
                                         clearance="internal", actor=other_admin)
    other_uid = urlsafe_base64_encode(str(other_admin.user_id).encode())
    scim_token_create(tenant=world.tenant, name="idp")
    other_scim, _ = scim_token_create(tenant=other, name="theirs")
    foreign = {
        "document": [world.other_doc.id],
        "section": [world.other_doc.section_ids["intro"]],
        "job": [IngestionJob.objects.create(
            tenant=other, document=world.other_doc, status=IngestionJob.Status.FAILED, created_by=other_admin.user
        ).id],
        "membership": [other_admin.pk],
        "group": [Group.objects.get(tenant=other, slug="security-team").pk],
        "token": [ApiToken.objects.get(membership=other_admin).pk],
        "version": [other_only.short_id, str(other_only.pk), str(index_versions.index_version_active(tenant=other).pk)],
        "invitation": [other_invitation.pk],
        "scim_token": [other_scim.pk],
        "sso_slug": [other.slug],
        # Links from e-mails are bearer secrets of no tenant: a wrong one is wrong for everyone alike.
        "invitation_key": ["k" * 43],
        "reset": [f"{other_uid}.cw0f1a-0123456789abcdef0123456789abcdef"],
        "source": [Source.objects.create(tenant=other, name="theirs", kind="folder",
                                         path=str(SOURCE_ROOT / other.slug)).pk],
        # A flagged chunk of the other tenant, in its review queue.
        "chunk": [_flag(Chunk.objects.get(section_id=world.other_doc.section_ids["intro"]))],
    }
    wiki = Source.objects.create(tenant=world.tenant, name="wiki", kind="folder",
                                 path=str(SOURCE_ROOT / world.tenant.slug))
    SourceDetached.objects.create(tenant=world.tenant, source=wiki, path="gone.md", access_level=0)
    # A document the source synced (as its sync leaves one: the source's metadata, its item).
    synced = factories.document(world.tenant, title="Wiki page", source="wiki.md", access_level=AccessLevel.INTERNAL,
                                metadata={SOURCE_ID: wiki.pk, SOURCE_PATH: "wiki.md"})
    factories.section(synced)
    SourceItem.objects.create(tenant=world.tenant, source=wiki, path="wiki.md", document=synced, version="v1",
                              content_hash="h", access_level=AccessLevel.INTERNAL, access_groups=[])
    _flag(Chunk.objects.get(section_id=world.doc.section_ids["intro"]))
    return ConsoleWorld(world, job, batch, active, shadow, foreign, synced)


# Made-up ids of each kind: unused, out of range, or not ids at all (where the route's converter lets them through).
MADE_UP = {
    "document": lambda: [uuid.uuid4()],
    "section": lambda: [uuid.uuid4()],
    "job": lambda: [uuid.uuid4()],
    "membership": lambda: [2**62, 10**40],
    "group": lambda: [2**62, 10**40],
    "token": lambda: [2**62, 10**40],
    "version": lambda: [str(uuid.uuid4()), uuid.uuid4().hex[:12], "not-a-version"],
    "invitation": lambda: [2**62, 10**40],
    "scim_token": lambda: [2**62, 10**40],
    "sso_slug": lambda: ["no-such-tenant", "x" * 63],
    "invitation_key": lambda: [uuid.uuid4().hex, "x"],
    "reset": lambda: ["MTIz.cw0f1a-0123456789abcdef0123456789abcdef", "nonsense", "x.set-password"],
    "source": lambda: [2**62, 10**40],
    "chunk": lambda: [uuid.uuid4()],
}
PARAM = {"document": "document_id", "section": "section_id", "job": "job_id", "membership": "membership_id",
         "group": "group_id", "token": "token_id", "version": "ref", "invitation": "invitation_id",
         "invitation_key": "key", "reset": "link", "scim_token": "token_id",
         "sso_slug": "slug", "source": "source_id", "chunk": "chunk_id"}


# ----------------------------------------------------------------------------- requests


def signed_in(w: ConsoleWorld, actor: str) -> Client:
    """A client with CSRF checks on, signed in as ``actor`` with their tenant chosen."""
    client = Client(enforce_csrf_checks=True)
    membership = w.membership(actor)
    if membership is not None:
        client.force_login(User.objects.get(pk=membership.user_id))  # with its present password hash
        session = client.session
        session[SESSION_KEY] = membership.pk
        session.save()
    return client


def csrf_token(client: Client, actor: str) -> str:
    """The token a browser would send: from the cookie a rendered form page sets."""
    page = "console:sign-in" if actor == "anonymous" else "console:tenant-switch"
    assert client.get(reverse(page)).status_code == 200
    return client.cookies["csrftoken"].value


_TOKENS = re.compile(rb'(name="csrfmiddlewaretoken" value="|"X-CSRFToken": ")[^"]+')


def page_body(response) -> bytes:
    """The body with the per-response CSRF tokens masked (they differ on every render)."""
    return _TOKENS.sub(rb"\1<token>", response.content)


@dataclass
class Ctx:
    w: ConsoleWorld
    actor: str
    target: object  # the route's path id
    client: Client


def _own_folder(ctx: Ctx) -> str:
    """The actor's tenant's own folder below the source root (the only place its sources may read)."""
    tenant = ctx.w.api.other if ctx.actor == "other_tenant" else ctx.w.api.tenant
    return str(SOURCE_ROOT / tenant.slug)


def _tokens_offered(ctx: Ctx) -> dict:
    """What the "Change password" form carries: the number of API tokens it offered to revoke (a form that offered
    another number is shown again, "choose again"), the box left unchecked."""
    actor = ctx.w.api.actors.get(ctx.actor)
    membership = actor.membership if actor is not None else None
    return {"tokens_offered": str(password_tokens_count(membership.user) if membership else 0)}


def _upload_preview(ctx: Ctx) -> dict:
    return {"title": "New", "text": "# New\nHello there.", "content_type": "text/markdown",
            "access_level": "internal", "tags": "", "action": "preview"}


def _upload_ingest(ctx: Ctx) -> dict:
    """An "Ingest" after a preview: with the digest that preview showed (a refused actor sees none)."""
    data = _upload_preview(ctx)
    preview = ctx.client.post(reverse("console:document-upload"),
                              {**data, "csrfmiddlewaretoken": ctx.client.cookies["csrftoken"].value})
    digest = re.search(rb'name="preview_digest" value="([0-9a-f]+)"', preview.content)
    return {**data, "action": "ingest", "preview_digest": digest.group(1).decode() if digest else "0" * 64}


def _version_config(ctx: Ctx) -> dict:
    form = IndexVersionForm()
    data = {name: field.initial for name, field in form.fields.items() if field.initial not in (None, False)}
    return {**data, "name": "smaller", "target_tokens": 96}


def _golden(ctx: Ctx) -> dict:
    line = {"question": "internal readers", "document": "Security policy", "spans": [[0, 10]]}
    return {"golden": SimpleUploadedFile("golden.jsonl", json.dumps(line).encode()), "mode": "keyword",
            "k": "1,5", "budget": "1000", "compare": "on"}


@dataclass(frozen=True)
class Case:
    """One route with one target and, for a state-changing route, one POST.

    ``get``/``post``: the expected answer per actor in ``ACTORS`` order: a status, with ``*`` where
    the POST must change the database (without, it must change nothing)."""

    route: str
    get: tuple[str, ...]
    kind: str | None = None  # the kind of the path id (see MADE_UP)
    target: Callable[[ConsoleWorld], object] | None = None
    query: Callable[[ConsoleWorld], str] = lambda w: ""
    data: Callable[[Ctx], dict] | None = None
    post: tuple[str, ...] | None = None
    more: Callable[[ConsoleWorld], dict] | None = None  # the route's other path ids, always the tenant's own

    def url(self, w: ConsoleWorld, target=None) -> str:
        kwargs = {PARAM[self.kind]: target if target is not None else self.target(w)} if self.kind else {}
        kwargs.update(self.more(w) if self.more else {})
        return reverse(f"console:{self.route}", kwargs=kwargs) + self.query(w)


def E(*answers: str) -> tuple[str, ...]:  # noqa: N802 -- a row of the matrix
    assert len(answers) == len(ACTORS)
    return answers


ALL = E("302", "200", "200", "200", "200", "200")
ADMINS = E("302", "200", "403", "403", "403", "200")  # the other tenant's admin in their own tenant
EDITORS = E("302", "200", "200", "403", "200", "200")
ADMIN_OF_IT = E("302", "404", "403", "403", "403", "200")  # an admin page about an object of the tenant
ADMIN_POST_ONLY = E("302", "405", "403", "403", "403", "405")
EDITOR_POST_ONLY = E("302", "405", "405", "403", "405", "405")
MEMBER_POST_ONLY = E("302", "405", "405", "405", "405", "405")
ALL_PUBLIC = E("200", "200", "200", "200", "200", "200")  # a page for anyone, signed in or not
NOT_FOUND = E("404", "404", "404", "404", "404", "404")  # a wrong e-mailed link, for anyone


def _doc(w):
    return w.doc.id


def _section(key):
    return lambda w: w.section_ids[key]


def _access(level):
    return lambda ctx: {f"s-{ctx.target}-access_level": level}


_ROWS: list[tuple[str, Case]] = [
    ("dashboard", Case("dashboard", ALL)),
    # Signed-in people are sent on to the dashboard, whatever they post.
    ("sign-in", Case("sign-in", E("200", "302", "302", "302", "302", "302"),
                     data=lambda ctx: {"username": "viewer@example.com", "password": PASSWORD},
                     post=E("302", "302", "302", "302", "302", "302"))),
    ("sign-in (wrong password)", Case("sign-in", E("200", "302", "302", "302", "302", "302"),
                                      data=lambda ctx: {"username": "viewer@example.com", "password": "wrong" * 3},
                                      post=E("200", "302", "302", "302", "302", "302"))),
    ("sign-out", Case("sign-out", E("405", "405", "405", "405", "405", "405"), data=lambda ctx: {},
                      post=E("302", "302", "302", "302", "302", "302"))),
    ("tenant-switch", Case("tenant-switch", ALL,
                           data=lambda ctx: {"membership": str((ctx.w.membership(ctx.actor)
                                                                or ctx.w.membership("viewer")).pk)},
                           post=E("302", "302", "302", "302", "302", "302"))),
    ("password-change", Case("password-change", ALL,
                             data=lambda ctx: {"old_password": PASSWORD, "new_password1": NEW_PASSWORD,
                                               "new_password2": NEW_PASSWORD, **_tokens_offered(ctx)},
                             post=E("302", "302*", "302*", "302*", "302*", "302*"))),
    ("password-change (wrong old password)", Case(
        "password-change", ALL,
        data=lambda ctx: {"old_password": "wrong" * 3, "new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD,
                          **_tokens_offered(ctx)},
        post=E("302", "200", "200", "200", "200", "200"))),
    ("documents", Case("documents", ALL)),
    # The preview stores nothing, even when allowed; the public-clearance editor may not set "internal".
    ("document-upload (preview)", Case("document-upload", EDITORS, data=_upload_preview,
                                       post=E("302", "200", "200", "403", "200", "200"))),
    ("document-upload (ingest)", Case("document-upload", EDITORS, data=_upload_ingest,
                                      post=E("302", "200*", "200", "403", "200*", "200*"))),
    # Bulk acts only on documents the member may change: the other tenant's admin, the public-clearance and the
    # confidential editors change nothing (not found, or refused), a viewer is refused the page.
    ("documents-bulk", Case("documents-bulk", EDITOR_POST_ONLY, data=lambda ctx: {
        "documents": [str(ctx.w.doc.id)], "action": "policy", "access_level": "confidential", "confirm": "yes"},
        post=E("302", "302", "302", "403", "302", "302*"))),
    ("document", Case("document", E("302", "404", "404", "200", "200", "200"), "document", _doc)),
    ("document (a section chosen)", Case("document", E("302", "404", "404", "200", "200", "200"), "document", _doc,
                                         query=lambda w: f"?section={w.section_ids['incident']}")),
    # The confidential editor sees the document but not all of its sections: refused by the service (403).
    ("document-replace", Case(
        "document-replace", EDITOR_POST_ONLY, "document", _doc,
        data=lambda ctx: {"file": SimpleUploadedFile("new.md", b"# New\nHello there."), "title": ""},
        post=E("302", "404", "404", "403", "403", "302*"))),
    ("document-delete", Case("document-delete", E("302", "404", "404", "403", "403", "200"), "document", _doc,
                             data=lambda ctx: {}, post=E("302", "404", "404", "403", "403", "302*"))),
    # Detaching a synced document from its source (the API's detach: the tenant's admins, a document they can see).
    ("document-detach", Case("document-detach", ADMIN_OF_IT, "document", lambda w: w.synced.id, data=lambda ctx: {},
                             post=E("302", "404", "403", "403", "403", "302*"))),
    ("document-as-member", Case("document-as-member", ADMIN_OF_IT, "document", _doc,
                                query=lambda w: f"?member={w.membership('viewer').pk}")),
    # GET: the section's access form (the document page fetches it when a row is opened).
    ("section-access (readable)", Case("section-access", E("302", "404", "404", "403", "200", "200"), "section",
                                       _section("intro"),
                                       data=_access("confidential"),
                                       post=E("302", "404", "404", "403", "302*", "302*"))),
    # A section the editor may not read is the same 404 as a missing one.
    ("section-access (restricted)", Case("section-access", E("302", "404", "404", "403", "404", "200"), "section",
                                         _section("incident"),
                                         data=_access("confidential"),
                                         post=E("302", "404", "404", "403", "404", "302*"))),
    ("section-access (above clearance)", Case("section-access", E("302", "404", "404", "403", "200", "200"), "section",
                                              _section("intro"),
                                              data=_access("restricted"),
                                              post=E("302", "404", "404", "403", "403", "302*"))),
    ("section-readers", Case("section-readers", ADMIN_OF_IT, "section", _section("incident"))),
    ("jobs", Case("jobs", ALL)),
    # The job's document has sections above the viewer and the confidential editor: a job of it they did not start is
    # not theirs to see (it would date a change to what they cannot read: docs/security.md, "Job times"); its retry
    # is the same 404 (a viewer who sees a job and may not retry it: tests/test_job_retry.py).
    ("job", Case("job", E("302", "404", "404", "404", "404", "200"), "job", lambda w: w.job.id)),
    ("job-card", Case("job-card", E("302", "404", "404", "404", "404", "200"), "job", lambda w: w.job.id)),
    ("job (batch)", Case("job", E("302", "404", "404", "404", "404", "200"), "job", lambda w: w.batch.id)),
    ("job-retry", Case("job-retry", MEMBER_POST_ONLY, "job", lambda w: w.job.id, data=lambda ctx: {},
                       post=E("302", "404", "404", "404", "404", "302*"))),
    ("search", Case("search", ALL, query=lambda w: "?query=internal+readers&mode=keyword")),
    # Search as another member, and a chosen index version: admins only (others: an invalid form, no search).
    ("search (as a member)", Case("search", ALL, query=lambda w: (
        f"?query=internal+readers&mode=keyword&as_member={w.membership('viewer').pk}&index_version={w.active.pk}"))),
    ("members", Case("members", ADMINS,
                     data=lambda ctx: {"email": "new@example.com", "role": "viewer", "clearance": "internal"},
                     post=E("302", "302*", "403", "403", "403", "302*"))),
    ("member-change", Case("member-change", ADMIN_POST_ONLY, "membership", lambda w: w.membership("viewer").pk,
                           data=lambda ctx: {"role": "viewer", "clearance": "restricted"},
                           post=E("302", "404", "403", "403", "403", "302*"))),
    ("member-active", Case("member-active", ADMIN_OF_IT, "membership", lambda w: w.membership("viewer").pk,
                           query=lambda w: "?is_active=false", data=lambda ctx: {"is_active": "false"},
                           post=E("302", "404", "403", "403", "403", "302*"))),
    ("groups", Case("groups", ADMINS, data=lambda ctx: {"slug": "legal", "name": "Legal"},
                    post=E("302", "302*", "403", "403", "403", "302*"))),
    ("group-rename", Case("group-rename", ADMIN_POST_ONLY, "group",
                          lambda w: Group.objects.get(tenant=w.tenant, slug="finance").pk,
                          data=lambda ctx: {"name": "Money"}, post=E("302", "404", "403", "403", "403", "302*"))),
    # The other tenant's admin cannot name a member of this tenant: not one of the form's choices.
    ("tokens", Case("tokens", ADMINS, data=lambda ctx: {"membership": str(ctx.w.membership("viewer").pk),
                                                        "name": "ci"},
                    post=E("302", "400", "403", "403", "403", "201*"))),
    ("token-revoke", Case("token-revoke", ADMIN_OF_IT, "token",
                          lambda w: ApiToken.objects.get(membership=w.membership("viewer")).pk,
                          data=lambda ctx: {}, post=E("302", "404", "403", "403", "403", "302*"))),
    ("index-versions", Case("index-versions", ADMINS, data=_version_config,
                            post=E("302", "302*", "403", "403", "403", "302*"))),
    ("index-version", Case("index-version", ADMIN_OF_IT, "version", lambda w: w.shadow.short_id)),
    ("index-version (by uuid)", Case("index-version", ADMIN_OF_IT, "version", lambda w: str(w.active.pk))),
    # The same configuration in another tenant is that tenant's own version, with the same short id.
    ("index-version (a short id both tenants have)", Case("index-version", ADMINS, "version",
                                                          lambda w: w.active.short_id)),
    ("index-version-build", Case("index-version-build", ADMIN_POST_ONLY, "version", lambda w: w.shadow.short_id,
                                 data=lambda ctx: {}, post=E("302", "404", "403", "403", "403", "302*"))),
    ("index-version-progress", Case("index-version-progress", ADMIN_OF_IT, "version", lambda w: str(w.active.pk))),
    # An evaluation runs searches and stores nothing.
    ("index-version-evaluate", Case("index-version-evaluate", ADMIN_POST_ONLY, "version",
                                    lambda w: str(w.active.pk), data=_golden,
                                    post=E("302", "404", "403", "403", "403", "200"))),
    ("index-version-activate", Case("index-version-activate", ADMIN_OF_IT, "version", lambda w: w.shadow.short_id,
                                    data=lambda ctx: {"force": "on"},
                                    post=E("302", "404", "403", "403", "403", "302*"))),
    # The audit trail: admins only, of their own tenant; a document's "who retrieved this"; the export.
    ("audit", Case("audit", ADMINS)),
    ("audit (who retrieved a document)", Case("audit", ADMINS,
                                              query=lambda w: f"?document={w.doc.id}&action=search")),
    ("audit (export)", Case("audit", ADMINS, query=lambda w: "?export=csv")),
    # The tenant's audit settings: each admin changes their own tenant's (a change is a record too).
    ("audit-settings", Case("audit-settings", ADMINS, data=lambda ctx: {"retention_days": "400", "hash_queries": "on"},
                            post=E("302", "302*", "403", "403", "403", "302*"))),
    # Screening (issue 24): the review queue and the mode are the admins'; a decision on a flagged chunk
    # of the tenant (cworld flags the intro's chunk) is audited and changes it.
    ("review", Case("review", ADMINS)),
    ("review (decided)", Case("review", ADMINS, query=lambda w: "?state=decided")),
    ("review-settings", Case("review-settings", ADMIN_POST_ONLY, data=lambda ctx: {"screening": "flag"},
                             post=E("302", "302*", "403", "403", "403", "302*"))),
    ("review-decide", Case("review-decide", ADMIN_POST_ONLY, "chunk",
                           lambda w: Chunk.objects.get(section_id=w.doc.section_ids["intro"]).pk,
                           data=lambda ctx: {"decision": "keep_out"},
                           post=E("302", "404", "403", "403", "403", "302*"))),
    # A section's flagged head (in no chunk): decided as a chunk is, by the admins who may read its section.
    ("review-head-decide", Case("review-head-decide", ADMIN_POST_ONLY, "section",
                                lambda w: flag_head(w.doc.section_ids["intro"]),
                                data=lambda ctx: {"decision": "keep_out"},
                                post=E("302", "404", "403", "403", "403", "302*"))),
    # People (issue 28): invitations and password reset. The public pages answer everyone alike.
    ("password-forgot", Case("password-forgot", ALL_PUBLIC, data=lambda ctx: {"email": f"{ctx.actor}@example.com"},
                             post=E("200", "200", "200", "200", "200", "200"))),
    ("password-reset-confirm", Case("password-reset-confirm", NOT_FOUND, "reset",
                                    lambda w: "MTIz.cw0f1a-0123456789abcdef0123456789abcdef",
                                    data=lambda ctx: {"new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD},
                                    post=NOT_FOUND)),
    ("password-reset-complete", Case("password-reset-complete", ALL_PUBLIC)),
    ("invitation", Case("invitation", NOT_FOUND, "invitation_key", lambda w: "k" * 43)),
    ("invitation-accept", Case("invitation-accept", NOT_FOUND,
                               data=lambda ctx: {"password": NEW_PASSWORD, "password2": NEW_PASSWORD},
                               post=NOT_FOUND)),
    ("invitation-create", Case("invitation-create", ADMIN_POST_ONLY,
                               data=lambda ctx: {"invite-email": "fresh@example.com", "invite-role": "viewer",
                                                 "invite-clearance": "internal"},
                               post=E("302", "302*", "403", "403", "403", "302*"))),
    ("invitation-revoke", Case("invitation-revoke", ADMIN_POST_ONLY, "invitation",
                               lambda w: Invitation.objects.get(tenant=w.tenant).pk, data=lambda ctx: {},
                               post=E("302", "404", "403", "403", "403", "302*"))),
    # Single sign-on: the world's tenants offer none (404 for everyone); the settings are the admins'.
    ("sso-choose", Case("sso-choose", E("302", "302", "302", "302", "302", "302"))),
    ("sso-start", Case("sso-start", NOT_FOUND, "sso_slug", lambda w: w.tenant.slug)),
    ("sso-callback", Case("sso-callback", NOT_FOUND, "sso_slug", lambda w: w.tenant.slug,
                          query=lambda w: "?code=x&state=y")),
    ("sso-settings", Case("sso-settings", ADMINS,
                          data=lambda ctx: {"issuer": "https://idp.example", "client_id": "bulkhead",
                                            "group_map": "{}", "clearance_map": "{}", "action": "save"},
                          post=E("302", "302*", "403", "403", "403", "302*"))),
    ("scim-tokens", Case("scim-tokens", ADMINS, data=lambda ctx: {"name": "okta"},
                         post=E("302", "201*", "403", "403", "403", "201*"))),
    ("scim-token-revoke", Case("scim-token-revoke", ADMIN_POST_ONLY, "scim_token",
                               lambda w: ScimToken.objects.get(tenant=w.tenant).pk, data=lambda ctx: {},
                               post=E("302", "404", "403", "403", "403", "302*"))),
    # Sources (issue 29): admins only; adding one, a sync started.
    ("sources", Case("sources", ADMINS, data=lambda ctx: {
        "name": f"new-{ctx.actor}", "kind": "folder", "path": _own_folder(ctx), "access_level": "internal"},
        post=E("302", "302*", "403", "403", "403", "302*"))),
    ("sources (preview)", Case("sources", ADMINS, data=lambda ctx: {
        "name": "p", "kind": "folder", "path": _own_folder(ctx), "access_level": "internal", "action": "preview"},
        post=E("302", "200", "403", "403", "403", "200"))),
    ("source", Case("source", ADMIN_OF_IT, "source", lambda w: Source.objects.get(tenant=w.tenant).pk)),
    ("source-progress", Case("source-progress", ADMIN_OF_IT, "source", lambda w: Source.objects.get(tenant=w.tenant).pk)),
    ("source-sync", Case("source-sync", ADMIN_POST_ONLY, "source", lambda w: Source.objects.get(tenant=w.tenant).pk,
                         data=lambda ctx: {}, post=E("302", "404", "403", "403", "403", "302*"))),
    # Re-attaching a detached path (its id the tenant's own; the source's id is the one tried made-up and foreign).
    ("source-reattach", Case("source-reattach", ADMIN_POST_ONLY, "source", lambda w: Source.objects.get(tenant=w.tenant).pk,
                             data=lambda ctx: {}, post=E("302", "404", "403", "403", "403", "302*"),
                             more=lambda w: {"detached_id": SourceDetached.objects.get(tenant=w.tenant).pk})),
    # Without force, activating a version that lacks documents is refused (409) and changes nothing.
    ("index-version-activate (refused)", Case("index-version-activate", ADMIN_OF_IT, "version",
                                              lambda w: w.shadow.short_id, data=lambda ctx: {},
                                              post=E("302", "404", "403", "403", "403", "409"))),
]
CASES: dict[str, Case] = dict(_ROWS)
assert len(CASES) == len(_ROWS), "two matrix rows share a name"


# ----------------------------------------------------------------------------- running a case


@dataclass
class Session:
    """One actor's browser: signed in (or not), with the CSRF token a page gave it."""

    w: ConsoleWorld
    actor: str
    client: Client
    token: str

    @classmethod
    def of(cls, w: ConsoleWorld, actor: str) -> Session:
        client = signed_in(w, actor)
        return cls(w, actor, client, csrf_token(client, actor))

    def request(self, case: Case, method: str, target=None, *, with_token: bool = True):
        """``case``'s GET or POST, inside a savepoint that is rolled back: (response, changed).

        The browser's cookies are put back too, so the next request meets this one's world again
        (a sign-out, a password change or a sign-in changes the session the cookie names)."""
        target = target if target is not None else (case.target(self.w) if case.kind else None)
        cookies = copy.deepcopy(self.client.cookies)
        with transaction.atomic():
            before = console_snapshot()
            url = case.url(self.w, target)
            if method == "get":
                response = self.client.get(url)
            else:
                data = case.data(Ctx(self.w, self.actor, target, self.client))
                if with_token:
                    data["csrfmiddlewaretoken"] = self.token
                response = self.client.post(url, data)
            changed = console_snapshot() != before
            transaction.set_rollback(True)
        self.client.cookies = cookies
        return response, changed


def _csrf_refusal(response) -> bool:
    """The CSRF refusal's own page (``console.views.auth.csrf_failure``), not a role's 403."""
    return b"This page has expired" in response.content and b"nothing was done" in response.content


def _check(case: Case, response, changed: bool, expected: str, actor: str) -> str | None:
    """What is wrong with one answer, or None."""
    status, must_change = int(expected.rstrip("*")), expected.endswith("*")
    if response.status_code != status:
        return f"status {response.status_code}, expected {status}"
    if changed != must_change:
        return "the database changed" if changed else "the database did not change"
    console_page = any((t.name or "").startswith("console/") for t in response.templates)
    if status == 403 and (_csrf_refusal(response) or not console_page):
        return "a 403 that is not a page of the console (a CSRF refusal?)"
    if actor == "anonymous" and status == 302 and case.route != "sign-in" and not (
        response["Location"].startswith("/sign-in/")
    ):
        return f"anonymous sent to {response['Location']}, not to /sign-in/"
    return None


def test_authorization_matrix(cworld):
    """Every row, every actor: the GET (which never changes anything) and, for a state-changing
    route, the POST. All mismatches are reported together, as rows of the matrix."""
    sessions = {actor: Session.of(cworld, actor) for actor in ACTORS}
    wrong = []
    for name, case in CASES.items():
        for method, expected in (("get", case.get), ("post", case.post)):
            if expected is None:
                continue
            for actor, answer in zip(ACTORS, expected, strict=True):
                response, changed = sessions[actor].request(case, method)
                if problem := _check(case, response, changed, answer, actor):
                    wrong.append(f"{name}: {method.upper()} {case.url(cworld)} as {actor}: {problem}")
    assert not wrong, "\n".join(wrong)


def test_every_console_route_is_in_the_matrix():
    patterns = console_urls.urlpatterns
    assert all(isinstance(p, URLPattern) for p in patterns), "an include() would hide its routes from the matrix"
    routes = {p.name for p in patterns}
    assert None not in routes, "a console route without a name"
    assert routes == {case.route for case in CASES.values()}, "add the new route to CASES"
    # Every route with a path id is tried with another tenant's and made-up ids.
    for case in CASES.values():
        pattern = next(p for p in patterns if p.name == case.route)
        assert bool(pattern.pattern.converters) == (case.kind is not None), case.route


def test_a_post_to_a_read_only_route_changes_nothing(cworld):
    """Routes without a POST in the matrix: an admin's POST (with a valid token) changes nothing."""
    session = Session.of(cworld, "admin")
    posted = {c.route for c in CASES.values() if c.post}
    wrong = {}
    for name, case in CASES.items():
        if case.route in posted:
            continue
        read_only = Case(case.route, case.get, case.kind, case.target, case.query, data=lambda ctx: {"x": "1"})
        response, changed = session.request(read_only, "post")
        if changed or response.status_code >= 500:
            wrong[name] = (response.status_code, changed)
    assert not wrong


def test_posts_without_a_csrf_token_are_refused(cworld):
    session = Session.of(cworld, "admin")
    for name, case in CASES.items():
        if case.post is None or case.route == "sign-in":
            continue
        if case.data is _upload_ingest:
            case = Case(case.route, case.get, data=_upload_preview, post=case.post)
        response, changed = session.request(case, "post", with_token=False)
        assert response.status_code == 403 and _csrf_refusal(response), name
        assert not changed, name


# ----------------------------------------------------------------------------- no existence oracle


def _first_per_route() -> list[Case]:
    """One matrix row per route that takes a path id (one with a POST, where the route has one)."""
    seen, cases = set(), []
    for _, case in sorted(CASES.items(), key=lambda item: (item[1].post is None, item[0])):
        if case.kind and case.route not in seen:
            seen.add(case.route)
            cases.append(case)
    return cases


def test_ids_of_another_tenant_answer_like_made_up_ids(cworld):
    """For a member of each role, every route with a path id, by GET and POST: another tenant's ids
    get the same status and the same page as made-up ids, and change nothing; an admin (who passes
    every role check) gets 404 (405 for a GET of a POST-only route, which is decided first)."""
    sessions = {actor: Session.of(cworld, actor) for actor in ("viewer", "editor", "admin")}
    for case in _first_per_route():
        for actor, session in sessions.items():
            for method in ["get"] + (["post"] if case.post else []):
                answers = {}
                targets = [*((f"foreign {t}", t) for t in cworld.foreign[case.kind]),
                           *((f"made-up {t}", t) for t in MADE_UP[case.kind]())]
                for label, target in targets:
                    response, changed = session.request(case, method, target)
                    assert not changed, (case.route, actor, method, label)
                    answers[label] = (response.status_code, page_body(response))
                first_label, first = next(iter(answers.items()))
                for label, answer in answers.items():
                    assert answer == first, (
                        f"{case.route} as {actor}, {method.upper()}: {first_label} {first[0]}, {label} {answer[0]}")
                if actor == "admin":
                    assert first[0] == (405 if method == "get" and case.get[-1] == "405" else 404), (
                        case.route, method, first[0])


def _refused_value(body: bytes) -> bytes:
    return re.sub(rb"Select a valid choice\. \S+ is not one", b"Select a valid choice. <id> is not one", body)


def test_ids_in_forms_of_another_tenant_answer_like_made_up_ids(cworld):
    """Ids that travel in a query string or a form: a member to view a document as, to search as, an
    index version to search, a tenant to switch to."""
    w = cworld
    foreign_member, made_up_member = w.foreign["membership"][0], 2**31 - 1
    foreign_version, made_up_version = IndexVersion.objects.get(tenant=w.other, is_active=True).pk, uuid.uuid4()
    doc_as = reverse("console:document-as-member", kwargs={"document_id": w.doc.id})
    search = "/search/?query=internal+readers&mode=keyword"
    pairs = [
        (f"{doc_as}?member=", foreign_member, made_up_member),
        (f"{search}&as_member=", foreign_member, made_up_member),
        (f"{search}&index_version=", foreign_version, made_up_version),
    ]
    session = Session.of(w, "admin")
    for url, foreign_id, made_up_id in pairs:
        before = console_snapshot()
        foreign, made_up = session.client.get(f"{url}{foreign_id}"), session.client.get(f"{url}{made_up_id}")
        assert foreign.status_code == made_up.status_code == 200, url
        # The form's message repeats the refused value; nothing else may differ.
        assert b"Select a valid choice" in foreign.content, url
        assert _refused_value(page_body(foreign)) == _refused_value(page_body(made_up)), url
        assert console_snapshot() == before
    answers = [session.client.post("/tenant/", {"membership": str(m), "csrfmiddlewaretoken": session.token})
               for m in (foreign_member, made_up_member)]
    assert [a.status_code for a in answers] == [200, 200]
    assert page_body(answers[0]) == page_body(answers[1])
    assert session.client.session[SESSION_KEY] == w.membership("admin").pk


def test_ids_a_member_may_not_see_answer_like_made_up_ids(cworld):
    """Inside the tenant: a document with no section the member may read, a section they may not read
    (as a path id and as ``?section=``), a job of a document they cannot see, or see only part of."""
    w = cworld
    hidden_doc = factories.document(w.tenant, title="Board minutes", access_level=AccessLevel.RESTRICTED)
    hidden_job = IngestionJob.objects.create(tenant=w.tenant, document=hidden_doc)
    rows = [
        ("low_clearance", CASES["document"], "get", w.doc.id),  # public clearance: no section of the document
        ("editor", CASES["document-delete"], "post", hidden_doc.id),
        ("editor", CASES["section-access (restricted)"], "post", w.section_ids["incident"]),
        ("viewer", CASES["job"], "get", hidden_job.id),
        # A job of a document they read part of, started by someone else (docs/security.md, "Job times").
        ("viewer", CASES["job"], "get", w.job.id),
        ("viewer", CASES["job-card"], "get", w.job.id),
    ]
    for actor, case, method, hidden in rows:
        session = Session.of(w, actor)
        hidden_answer, changed = session.request(case, method, hidden)
        made_up, _ = session.request(case, method, uuid.uuid4())
        assert not changed
        assert hidden_answer.status_code == made_up.status_code == 404, (actor, case.route)
        assert page_body(hidden_answer) == page_body(made_up), (actor, case.route)
    # A section chosen on a page the viewer may see: nothing is chosen, as for a made-up id.
    url = reverse("console:document", kwargs={"document_id": w.doc.id})
    client = signed_in(w, "viewer")
    hidden_answer = client.get(f"{url}?section={w.section_ids['incident']}")
    made_up = client.get(f"{url}?section={uuid.uuid4()}")
    assert hidden_answer.status_code == made_up.status_code == 200
    assert page_body(hidden_answer) == page_body(made_up)


def test_an_ambiguous_short_version_id_is_not_a_server_error(cworld):
    """Two versions of the tenant whose ids start alike: the short prefix names neither (400, not 500)."""
    prefix = "abcdef"
    for _ in range(2):
        factories.index_version(cworld.tenant, config_hash=prefix + uuid.uuid4().hex)
    client = signed_in(cworld, "admin")
    for route in ("index-version", "index-version-progress", "index-version-activate"):
        response = client.get(reverse(f"console:{route}", kwargs={"ref": prefix}))
        assert response.status_code == 400, route
