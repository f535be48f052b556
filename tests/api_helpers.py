"""Helpers for the REST API tests: actors, documents built directly in the database (no
worker needed), and a snapshot of everything an API call could change -- to assert that a
refused call changed nothing. The fixtures are in ``tests.api_fixtures``. Also the console's
signed-in test client (``console_client``)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass

from django.db.models import F
from django.test import Client
from rest_framework.test import APIClient

from accounts.models import ApiToken, Group, GroupMembership, Invitation, Membership
from accounts.policy import AccessLevel
from accounts.services import api_token_create, group_create, membership_create, tenant_create
from audit.models import AuditEvent, AuditSettings
from kb.index_versions import index_version_active
from kb.models import HEAD_SCREENING, Chunk, Document, IngestionJob, ScreeningSettings, Section
from tests import factories


def console_client(membership: Membership, **client_options) -> Client:
    """A test client of the console, signed in as ``membership``'s user with its tenant chosen."""
    from console.membership import SESSION_KEY

    client = Client(**client_options)
    client.force_login(membership.user)
    session = client.session
    session[SESSION_KEY] = membership.pk
    session.save()
    return client


def invitation_accept_mailed(email: str, *, password: str = "an invitation accepting test pass") -> Membership:
    """Accept, as the person would, the last invitation mailed to ``email`` (Django's test outbox: adding a
    member through the console or the API invites them, and they join only by accepting). ``password``: the
    one a new person sets, or an existing account's own."""
    import re

    from django.core import mail

    from accounts.invitations import invitation_accept

    sent = [m for m in mail.outbox if email in m.to]
    assert sent, f"no invitation was mailed to {email}"
    key = re.search(r"/invitation/([^/\s]+)/", sent[-1].body).group(1)
    return invitation_accept(key=key, password=password)


ACTORS = ["anonymous", "other_tenant", "low_clearance", "viewer", "editor", "admin"]


@dataclass
class Actor:
    name: str
    membership: Membership | None
    key: str | None

    def client(self) -> APIClient:
        client = APIClient()
        if self.key:
            client.credentials(HTTP_AUTHORIZATION=f"Token {self.key}")
        return client


@dataclass
class World:
    tenant: object
    other: object
    actors: dict[str, Actor]
    doc: Document  # internal intro, restricted+security-team section, confidential region
    other_doc: Document  # in the other tenant
    section_ids: dict[str, uuid.UUID]

    def client(self, actor: str) -> APIClient:
        return self.actors[actor].client()


def token_client(membership: Membership) -> APIClient:
    """An API client holding a new token of ``membership``."""
    _, token = api_token_create(membership=membership, name="k")
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    return api


def member_with_token(tenant, email, role, clearance, groups=()):
    membership = membership_create(tenant=tenant, email=email, role=role, clearance=clearance, group_slugs=groups)
    _, key = api_token_create(membership=membership, name=email)
    return membership, key


def make_document(tenant, *, title="Security policy", sections, default=AccessLevel.INTERNAL, tags=(), source=""):
    """A ready document with sections and chunks, as ingestion would leave it.

    ``sections``: ``[(key, parent_key, title, level, group_slugs, body)]`` in document order.
    """
    groups = dict(Group.objects.filter(tenant=tenant).values_list("slug", "id"))
    text = ""
    spans = []
    for key, _, heading, _, _, body in sections:
        start = len(text)
        text += (f"# {heading}\n" if heading else "") + body + "\n"
        spans.append((key, start, len(text)))
    document = factories.document(
        tenant, title=title, source=source, content_type="text/markdown", text=text, size_bytes=len(text),
        tags=list(tags), access_level=default, status=Document.Status.READY,
    )
    version = index_version_active(tenant=tenant)
    ids: dict[str, uuid.UUID] = {}
    for order, ((key, parent, heading, level, slugs, body), (_, start, end)) in enumerate(
        zip(sections, spans, strict=True)
    ):
        ids[key] = uuid.uuid4()
        depth = sum(1 for _ in _ancestors(sections, parent))
        group_ids = sorted(groups[s] for s in slugs)
        body_start, body_end = end - len(body) - 1, end - 1
        section = factories.section(
            document, id=ids[key], parent_id=ids.get(parent), key=key, order=order, depth=depth, title=heading,
            heading_path=[heading] if heading else [], kind="heading" if heading else "document", start=start,
            end=end, body_spans=[[body_start, body_end]], own_level=level, own_groups=group_ids, access_level=level,
            access_groups=group_ids,
        )
        # The chunk is the body: its text, what was embedded, and the section's access.
        factories.chunk(section, version, ordinal=order, start=body_start, end=body_end, embedding=[0.01] * 384)
    document.section_ids = ids
    return document


def _ancestors(sections, key):
    parents = {k: p for k, p, *_ in sections}
    while key is not None:
        yield key
        key = parents[key]


POLICY_SECTIONS = [
    ("root", None, "", AccessLevel.INTERNAL, [], "Preamble for internal readers."),
    ("intro", "root", "Security policy", AccessLevel.INTERNAL, [], "Intro for internal readers."),
    ("incident", "intro", "Incident response", AccessLevel.RESTRICTED, ["security-team"], "Only the security team."),
    ("playbook", "incident", "Playbook", AccessLevel.RESTRICTED, ["security-team"], "Page the on-call engineer."),
    ("region", "playbook", "", AccessLevel.INTERNAL, [], "An internal note under a restricted heading."),
    ("reporting", "intro", "Reporting", AccessLevel.CONFIDENTIAL, [], "Names of past reporters."),
]


def _digest_statement(parts: dict) -> tuple[tuple[str, ...], str, tuple]:
    """The names, the SQL and the parameters of one query that digests each of ``parts``' querysets (see
    :func:`table_digests`)."""
    selects, params = [], []
    for queryset in parts.values():
        sql, query_params = queryset.query.sql_with_params()
        selects.append(f"(SELECT md5(coalesce(string_agg(r::text, ',' ORDER BY r::text), '')) FROM ({sql}) r)")
        params.extend(query_params)
    return tuple(parts), "SELECT " + ", ".join(selects), tuple(params)


def _run_digests(names: tuple[str, ...], sql: str, params: tuple) -> dict[str, str]:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return dict(zip(names, cursor.fetchone(), strict=True))


def table_digests(parts: dict) -> dict[str, str]:
    """For each name, a digest of the rows its queryset (a ``values_list``) selects, in any order: two calls
    give equal digests exactly when the same rows (as sets of values) were selected.

    Computed by PostgreSQL in one query (each row as text, sorted, hashed), so that a test which compares
    the database before and after each of a thousand requests does not load and sort every row in Python
    each time (the console's authorization matrix spent half its time in that)."""
    return _run_digests(*_digest_statement(parts))


class TableDigests:
    """:func:`table_digests` of a fixed set of querysets (those ``parts`` returns), compiled into its one query on the
    first call and that query run again on every later one: the querysets and their SQL are the same each time, and
    building and compiling them again was most of the test process's time of a snapshot (1.6 ms of 2.1, taken
    before and after each of the console matrix's 1,250 requests; docs/benchmarks.md, "The suite, twenty-fifth
    session")."""

    def __init__(self, parts: Callable[[], dict]):
        self._parts = parts
        self._statement: tuple[tuple[str, ...], str, tuple] | None = None

    def __call__(self) -> dict[str, str]:
        if self._statement is None:
            self._statement = _digest_statement(self._parts())
        return _run_digests(*self._statement)


def snapshot_parts() -> dict:
    """The querysets :func:`snapshot` digests."""
    from sources.models import Source, SourceSync

    return {
        "documents": Document.objects.values_list("id", "title", "source", "sha256", "status", "access_level",
                                                  "access_groups", "tags"),
        # A head's review (kb.screening.head_review_decide) is in its section's metadata.
        "sections": Section.objects.annotate(head_review=F(f"metadata__{HEAD_SCREENING}__review")).values_list(
            "id", "own_level", "own_groups", "access_level", "access_groups", "head_review"),
        "chunks": Chunk.objects.values_list("id", "access_level", "access_groups", "review"),
        "jobs": IngestionJob.objects.values_list("id", "status"),
        "groups": Group.objects.values_list("id", "tenant_id", "slug", "name"),
        "memberships": Membership.objects.values_list("id", "tenant_id", "user_id", "role", "clearance", "is_active",
                                                      "consented"),
        "invitations": Invitation.objects.values_list("id", "tenant_id", "email", "role", "clearance", "group_ids",
                                                      "accepted_at", "revoked_at"),
        "group_memberships": GroupMembership.objects.values_list("membership_id", "group_id"),
        "tokens": ApiToken.objects.values_list("id", "membership_id", "revoked_at"),
        # Audit records are written by reads too (searches, content reads); the settings only by an admin.
        "audit_settings": AuditSettings.objects.values_list("tenant_id", "retention_days", "hash_queries"),
        "sources": Source.objects.values_list("id", "tenant_id", "name", "path", "exclude"),
        "source_syncs": SourceSync.objects.values_list("id", "status"),
        "screening_settings": ScreeningSettings.objects.values_list("tenant_id", "mode"),
    }


_snapshot = TableDigests(snapshot_parts)


def snapshot() -> dict:
    """Everything a write through the API could change (token use times excepted), a digest per table
    (:func:`table_digests`): equal snapshots, the same rows."""
    return _snapshot()


EMAILS = [f"{name}@example.com" for name in ("other_tenant", "low_clearance", "viewer", "editor", "admin")]


def build_world() -> World:
    """Two tenants, one member per actor (their users: :data:`EMAILS`), a document in each."""
    tenant = tenant_create(slug="acme", name="Acme")
    group_create(tenant=tenant, slug="security-team")
    group_create(tenant=tenant, slug="finance")
    other = tenant_create(slug="globex", name="Globex")
    group_create(tenant=other, slug="security-team")
    actors = {"anonymous": Actor("anonymous", None, None)}
    for name, tenant_, role, clearance, groups in [
        ("other_tenant", other, "admin", "restricted", ["security-team"]),
        ("low_clearance", tenant, "editor", "public", []),
        ("viewer", tenant, "viewer", "internal", []),
        ("editor", tenant, "editor", "confidential", []),
        ("admin", tenant, "admin", "restricted", ["security-team"]),
    ]:
        membership, key = member_with_token(tenant_, f"{name}@example.com", role, clearance, groups)  # EMAILS
        actors[name] = Actor(name, membership, key)
    doc = make_document(tenant, sections=POLICY_SECTIONS, tags=["security"], source="policies/security.md")
    other_doc = make_document(other, title="Globex secrets", sections=POLICY_SECTIONS, source="globex.md")
    return World(tenant, other, actors, doc, other_doc, doc.section_ids)


def sign_in_failures_heard(tenant, action: str) -> list[str]:
    """The client addresses of ``tenant``'s trail records of ``action`` (failed sign-ins, oldest first): what a
    tenant hears of a person's sign-ins."""
    return [d.get("address", "") for d in AuditEvent.objects.filter(tenant_id=tenant.pk, action=action)
            .order_by("pk").values_list("details", flat=True)]


def sign_in_fail(email: str, address: str) -> None:
    """One failed password sign-in of ``email`` from ``address`` (the form is shown again)."""
    assert Client(REMOTE_ADDR=address).post("/sign-in/", {"username": email, "password": "not it"}).status_code == 200


def flag_head(section_id) -> uuid.UUID:
    """Flag the head of section ``section_id`` (of a ``make_document`` document: its heading line) as the detector
    would have flagged a front matter's: the section made a non-heading one with a flagged record for its head's span
    (``kb.screening.held_heads``), so that the review queue's head routes take its id."""
    from kb.models import HEAD_SCREENING, Section
    from kb.screening import section_heads

    section = Section.objects.get(pk=section_id)
    rows = list(Section.objects.filter(document_id=section.document_id))
    head = dict(zip([row.id for row in rows], section_heads(rows), strict=True))[section.pk]
    Section.objects.filter(pk=section.pk).update(kind="document", metadata={**section.metadata, HEAD_SCREENING: {
        "detector": "test", "span": list(head), "digest": "test", "flagged": True, "score": 1.0,
        "reasons": ["override"]}})
    return section.pk


def agent_reads(world, document, actor: str = "viewer") -> list[str]:
    """What an agent acting for ``actor`` reads of ``document`` through MCP: its resource and every section it may
    read (the others are not found)."""
    import json

    from accounts.errors import NotFound
    from kb import mcp_server

    member = world.actors[actor].membership
    caller = mcp_server.Caller(lambda: member, "http://testserver")
    served = [mcp_server.document_work(str(document.pk))(member, caller)]
    from kb.models import Section

    for section in Section.objects.filter(document=document):
        try:
            served.append(json.dumps(mcp_server.read_section_work(str(section.pk))(member, caller)))
        except NotFound:
            continue
    return served
