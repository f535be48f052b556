"""Attacking index versions, their builds and evaluations, jobs, and the admin's "as member" and
"readers" pages (2026-12-04): what a hostile admin of lower clearance, an editor, or another tenant's
admin can learn from the numbers, ids, errors and orders these answer with."""

from __future__ import annotations

import json
import re
import uuid

import pytest
from rest_framework.test import APIClient

from accounts.policy import AccessLevel
from accounts.services import api_token_create, membership_create, tenant_create
from kb.index_versions import index_version_active
from kb.models import Chunk, Section
from tests import factories
from tests.api_helpers import console_client, make_document

pytestmark = pytest.mark.django_db

LOBBY = [("root", None, "Lobby", AccessLevel.INTERNAL, [], "The lobby opens at eight.")]
VAULT = [("root", None, "Vault", AccessLevel.RESTRICTED, [], "The vault code rotates every week.")]


def _api(membership) -> APIClient:
    _, key = api_token_create(membership=membership, name=f"key-{uuid.uuid4().hex[:6]}")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client


def _tenant(slug: str):
    tenant = tenant_create(slug=slug, name=slug.title())
    low = membership_create(tenant=tenant, email=f"low@{slug}.test", role="admin", clearance="internal")
    return tenant, low


def _grow(document, n: int = 3) -> None:
    """``n`` more chunks of the document's first section in the active version: its text grew."""
    section = Section.objects.filter(document=document).order_by("order").first()
    version = index_version_active(tenant=document.tenant)
    for i in range(n):
        factories.chunk(section, version, ordinal=100 + i)


# ----------------------------------------------------------------------------- a version's counts


def test_a_versions_counts_are_of_what_its_admin_may_read():
    """Found attacking index versions: the version list, its detail, the activation page and every API answer
    with a version counted ``chunk_count`` and ``document_count`` over every chunk of the version -- documents
    the admin may not know of included -- while the evaluation on the same page counts only the chunks its
    admin may read (found attacking evaluation reports). An internal admin read a restricted document's
    existence, and its size in chunks as the count moved when its text grew. Now the counts are of the chunks
    (and documents) the acting admin may read; the command line, run by whoever holds the database, counts all."""
    tenant, low = _tenant("version-counts")
    make_document(tenant, title="lobby.md", sections=LOBBY)
    vault = make_document(tenant, title="vault.md", default=AccessLevel.RESTRICTED, sections=VAULT)
    version = index_version_active(tenant=tenant)
    api, console = _api(low), console_client(low)

    def seen() -> list:
        listed = api.get("/api/v1/index-versions/").json()["results"]
        created = api.post("/api/v1/index-versions/", {"config": {}, "name": ""}, format="json").json()
        activated = api.post(f"/api/v1/index-versions/{version.short_id}/activate/", {}, format="json").json()
        listing, detail, activate = (console.get(path).content.decode() for path in (
            "/versions/", f"/versions/{version.short_id}/", f"/versions/{version.short_id}/activate/"))
        pages = [re.search(r"<td>(\d+)</td><td>(\d+)</td>", listing).groups(),
                 re.search(r'id="version-documents">(\d+)<.*id="version-chunks">(\d+)<', detail, re.S).groups(),
                 re.search(r"\((\d+) documents?, (\d+) chunks?\)", activate).groups()]
        return [[(v["chunk_count"], v["document_count"]) for v in listed],
                (created["chunk_count"], created["document_count"]),
                (activated["chunk_count"], activated["document_count"]), pages]

    before = seen()
    assert before[0] == [(1, 1)] and before[1] == before[2] == (1, 1)  # the lobby's one chunk
    assert before[3] == [("1", "1")] * 3
    _grow(vault)
    assert seen() == before
    assert Chunk.objects.filter(index_version=version).count() == 5  # the counts it once showed

    # An admin who may read both counts both.
    top = membership_create(tenant=tenant, email="top@version-counts.test", role="admin", clearance="restricted")
    assert [(v["chunk_count"], v["document_count"]) for v in
            _api(top).get("/api/v1/index-versions/").json()["results"]] == [(5, 2)]


# ----------------------------------------------------------------------------- the same tenant but its secret


def _handbook(secret: str) -> str:
    return (
        "# Handbook\n\nThe lobby opens at eight and closes at six. Visitors sign in at the front desk and wear a "
        "badge while they are in the building.\n\n"
        "## Vault <!-- access: restricted -->\n\n" + secret + "\n\n"
        "## Parking\n\nStaff park on the lower deck. Visitors park in the marked bays beside the entrance, for at "
        "most four hours a day.\n"
    )


# Two secrets of the same length (offsets may show a hidden part's size: decision #17), nothing else alike:
# few long-known words in one paragraph, against many rare ones in many short paragraphs -- other tokens,
# other chunks.
SECRET_PLAIN = ("The vault code is kept in the safe and changes each week. " * 12).strip()
SECRET_DENSE = "\n\n".join(
    ("Qxz-7 Vlorp 93kz Zyth-4 Mrrk 0x1F Plonq 55-b Ixx. " * 3).strip() for _ in range(5))
SECRET_DENSE = (SECRET_DENSE + " " + "Zq" * 400)[: len(SECRET_PLAIN)]


def _evaluated_world(slug: str, secret: str) -> dict:
    """A tenant whose handbook hides ``secret`` from its internal admin, ingested, built into a shadow version
    of small chunks through the real worker, and everything that admin is then shown about the versions."""
    from kb import evaluation
    from kb.evaluation import metric_rows
    from kb.models import Document, IndexVersion
    from kb.services import Upload, document_create
    from tests.ingestion_helpers import wait_for_jobs

    tenant, low = _tenant(slug)
    text = _handbook(secret)
    document, job = document_create(tenant=tenant, created_by=None, upload=Upload(
        content=text.encode(), title="handbook.md", source="handbook.md", content_type="text/markdown"))
    assert wait_for_jobs([job.pk])[0].status == "succeeded"
    document.refresh_from_db()
    assert document.status == Document.Status.READY
    api = _api(low)
    created = api.post("/api/v1/index-versions/", {"config": {"target_tokens": 24, "overlap": 0}, "name": "small"},
                       format="json").json()
    build = api.post(f"/api/v1/index-versions/{created['id']}/build/").json()
    assert wait_for_jobs([build["id"]])[0].status == "succeeded"
    shadow = IndexVersion.objects.get(pk=created["id"])
    active = index_version_active(tenant=tenant)

    lobby = text.index("The lobby")
    vault = text.index(secret)
    questions = [("when does the lobby open", lobby, lobby + 40),
                 ("what is the vault code", vault, vault + len(secret)),
                 ("where do visitors park", vault - 20, vault + len(secret) + 60)]
    golden = "\n".join(json.dumps({"question": q, "document": "handbook.md", "spans": [[s, e]]})
                       for q, s, e in questions).encode()
    reports = evaluation.version_evaluate(member=low, versions=[shadow, active], content=golden,
                                          filename="golden.jsonl", ks=(1, 3), mode="hybrid")
    rows = metric_rows(reports, budget=1000)
    job = api.get(f"/api/v1/jobs/{build['id']}/").json()
    listed = api.get("/api/v1/index-versions/").json()["results"]
    hidden = {version: Chunk.objects.filter(index_version=version, access_level=AccessLevel.RESTRICTED).count()
              for version in (shadow, active)}
    return {
        "rows": rows,
        "chunks": [(r.chunks.count, r.chunks.mean_tokens, r.chunks.max_tokens, r.chunks.orphans) for r in reports],
        "versions": [(v["name"], v["status"], v["chunk_count"], v["document_count"]) for v in listed],
        "build": (job["status"], job["progress"], job["error"]),
        "hidden": hidden,
    }


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_a_shadow_build_and_its_evaluation_show_nothing_of_a_section_above_the_admin(celery_worker):
    """Two tenants alike but for a restricted section's words and paragraphs (of the same length: a hidden part's
    size is shown by offsets, decision #17). Their internal admins each ingest, create a shadow version of small
    chunks, build it through the worker, evaluate it beside the active one on a golden file whose spans lie in,
    around and outside the hidden section, and list the versions: every figure they are shown is the same in
    both tenants, though the hidden section is cut into other chunks of other token counts. (It failed with the
    versions' counts over every chunk: the first finding above.)"""
    plain = _evaluated_world("secret-plain", SECRET_PLAIN)
    dense = _evaluated_world("secret-dense", SECRET_DENSE)
    assert len(SECRET_PLAIN) == len(SECRET_DENSE)
    assert list(plain["hidden"].values()) != list(dense["hidden"].values())  # the secrets did chunk differently
    for key in ("rows", "chunks", "versions", "build"):
        assert plain[key] == dense[key], key
    assert plain["rows"][1][1] != "-"  # the evaluation measured something


# ----------------------------------------------------------------------------- a document as a member, a section's readers


def _strip_ids(value):
    """An answer without what names its tenant: ids of documents, sections and memberships, e-mail addresses."""
    if isinstance(value, dict):
        return {k: _strip_ids(v) for k, v in value.items() if k not in ("id", "section_id", "document_id", "email")}
    if isinstance(value, list):
        return [_strip_ids(v) for v in value]
    return value


def test_as_member_and_readers_show_an_admin_nothing_of_a_section_above_them():
    """An internal admin looks at a handbook through a restricted member's eyes and asks who reads its hidden
    part, in a tenant where that part says one thing or another (its title and words, of the same lengths): the
    answers -- sections, heading paths, excerpts, reasons, chunk counts, readers and groups -- are the same but
    for ids, and name nothing of it. The same admin asking about another tenant's document, section or member
    gets the 404 of a made-up id."""
    answers = {}
    for which, (title, body) in {"one": ("Vault", "The code is 4711 and rotates."),
                                 "two": ("Cache", "The key is 0815 and is fixed.")}.items():
        tenant, low = _tenant(f"as-{which}")
        sections = [
            ("root", None, "Handbook", AccessLevel.INTERNAL, [], "The lobby opens at eight."),
            ("secret", "root", title, AccessLevel.RESTRICTED, [], body),
            ("parking", "root", "Parking", AccessLevel.INTERNAL, [], "Staff park on the lower deck."),
        ]
        document = make_document(tenant, title="handbook.md", sections=sections)
        member = membership_create(tenant=tenant, email=f"top@as-{which}.test", role="viewer", clearance="restricted")
        api = _api(low)
        as_member = api.get(f"/api/v1/documents/{document.pk}/as/{member.pk}/")
        readers = api.get(f"/api/v1/sections/{document.section_ids['secret']}/readers/")
        assert as_member.status_code == readers.status_code == 200
        for answer in (as_member, readers):
            text = answer.content.decode()
            assert title not in text and body not in text and body.split()[3] not in text
        answers[which] = (_strip_ids(as_member.json()), _strip_ids(readers.json()), api, document, member)
    assert answers["one"][:2] == answers["two"][:2]

    _, _, api, own_document, own_member = answers["one"]
    _, _, _, other_document, other_member = answers["two"]
    made_up = api.get(f"/api/v1/sections/{uuid.uuid4()}/readers/")
    assert made_up.status_code == 404
    for path in (f"/api/v1/documents/{other_document.pk}/as/{own_member.pk}/",
                 f"/api/v1/documents/{own_document.pk}/as/{other_member.pk}/",
                 f"/api/v1/sections/{other_document.section_ids['secret']}/readers/"):
        response = api.get(path)
        assert (response.status_code, response.json()) == (404, made_up.json()), path
