"""Policies at write time: chunks take their policy and their embedded heading prefix from the
stored section rows as they are when the chunks are stored, and the embedding cache never
tells a tenant (or a member) about text they may not read.

Regression tests of a security review's findings (numbers as in docs/security.md):
#1 a policy change racing an index build, #2 upload default groups, #4 stale heading
prefixes as a search oracle, #5 the shared embedding cache as a cross-tenant oracle.
"""

from __future__ import annotations

import pytest

from accounts.policy import AccessLevel
from accounts.services import group_create, membership_create, tenant_create
from ingestion.chunking.config import ChunkingConfig
from kb import retrieval
from kb.index_versions import index_version_activate, index_version_build, index_version_create
from kb.models import Chunk, Document, IngestionJob, Section
from kb.search import search
from kb.services import Upload, document_create, document_replace, section_set_access
from pipeline import services as pipeline
from pipeline.plan import section_id
from tests.ingestion_helpers import wait_for_jobs

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.worker]

ZEBRA_DOC = """# Handbook
Intro text for everyone who works here.

## Project Zebra
Overview of the acquisition and its schedule.

### Logistics
Trucks leave the depot at dawn every Monday with the spare parts.
"""


@pytest.fixture
def tenant():
    retrieval.count_cache.clear()
    tenant = tenant_create(slug="write-co", name="Write Co")
    group_create(tenant=tenant, slug="security-team")
    return tenant


def _ingest(tenant, text: str, *, created_by=None, **upload) -> tuple[Document, IngestionJob]:
    upload.setdefault("title", "Handbook")
    upload.setdefault("content_type", "text/markdown")
    document, job = document_create(tenant=tenant, created_by=created_by, upload=Upload(content=text.encode(), **upload))
    (job,) = wait_for_jobs([job.id])
    document.refresh_from_db()
    return document, job


def _wait_document_jobs(document: Document) -> None:
    wait_for_jobs(IngestionJob.objects.filter(document=document).values_list("id", flat=True))


def test_upload_default_groups_without_markers_ingest(celery_worker, tenant):
    """#2: default groups named only by the upload (no marker) used to raise KeyError and hang the job."""
    document, job = _ingest(tenant, "# Notes\nPlain notes without any marker.\n", groups=["security-team"])
    assert job.status == "succeeded", job.error
    assert document.status == "ready"
    security = tenant.groups.get(slug="security-team")
    chunks = list(Chunk.objects.filter(document=document))
    assert chunks and all(c.access_groups == [security.id] for c in chunks)


def _build_racing(monkeypatch, job: IngestionJob, change) -> int:
    """Run ``job`` in this process with ``change()`` committed right after its first embedding, i.e.
    between its planning (sections read) and its storing; returns how many times it embedded."""
    real_embed = pipeline.embed_plans
    calls = []

    def embed_then_change(plans):
        calls.append([p.job.pk for p in plans])
        stats = real_embed(plans)
        if len(calls) == 1:  # the concurrent edit, committed while the job holds its plan
            change()
        return stats

    monkeypatch.setattr(pipeline, "embed_plans", embed_then_change)
    pipeline.jobs_run([job.id])
    monkeypatch.setattr(pipeline, "embed_plans", real_embed)
    job.refresh_from_db()
    return len(calls)


def test_policy_change_during_a_build_reaches_the_built_chunks(celery_worker, tenant, monkeypatch):
    """#1: a PATCH committed while an index build embeds must be what the built chunks carry.

    The build job runs in this process so the PATCH can be placed exactly between planning
    (sections read) and storing; the real model embeds in between.
    """
    document, job = _ingest(tenant, ZEBRA_DOC, access_level="public")
    assert job.status == "succeeded", job.error
    viewer = membership_create(tenant=tenant, email="pub@w.io", role="viewer", clearance="public")
    logistics = Section.objects.get(document=document, title="Logistics")
    version, _ = index_version_create(tenant=tenant, config=ChunkingConfig(target_tokens=120), name="small")
    build = IngestionJob.objects.create(tenant=tenant, document=document, index_version=version)

    embedded = _build_racing(monkeypatch, build, lambda: section_set_access(
        actor=None, section=logistics, access_level="restricted", groups=["security-team"]))
    assert embedded and build.status == "succeeded", build.error
    security = tenant.groups.get(slug="security-team")
    built = Chunk.objects.filter(section=logistics, index_version=version)
    assert built.exists()
    assert {(c.access_level, tuple(c.access_groups)) for c in built} == {(AccessLevel.RESTRICTED, (security.id,))}
    # Every chunk of every version agrees with its section row.
    for chunk in Chunk.objects.filter(document=document).select_related("section"):
        assert (chunk.access_level, chunk.access_groups) == (chunk.section.access_level, chunk.section.access_groups)

    _wait_document_jobs(document)
    index_version_activate(version=version, force=True)
    for mode in ("vector", "keyword", "hybrid"):
        response = search(member=viewer, query="trucks depot dawn spare parts", mode=mode, top_k=10)
        assert all("Trucks leave" not in r.text for r in response.results), mode
        assert all("Trucks leave" not in c.text for c in response.contexts), mode


def _zebra_setup(tenant):
    document, job = _ingest(tenant, ZEBRA_DOC)
    assert job.status == "succeeded", job.error
    # Logistics gets its own (same) policy, so it stays internal when its parent is restricted.
    logistics = Section.objects.get(document=document, title="Logistics")
    section_set_access(actor=None, section=logistics, access_level="internal", groups=[])
    _wait_document_jobs(document)
    zebra = Section.objects.get(document=document, title="Project Zebra")
    section_set_access(actor=None, section=zebra, access_level="restricted", groups=["security-team"])
    return document, logistics


def test_restricting_a_heading_rederives_its_childrens_prefix(celery_worker, tenant):
    """#4: after a heading is restricted, its readable children no longer carry its title in the
    embedded prefix, so neither keyword nor vector search on its words finds them."""
    internal = membership_create(tenant=tenant, email="int@w.io", role="viewer", clearance="internal")
    security = membership_create(tenant=tenant, email="sec@w.io", role="viewer", clearance="restricted",
                                 group_slugs=["security-team"])
    document, logistics = _zebra_setup(tenant)
    # Until rebuilt, the stale chunks are gone from search (fail closed), never served with the old prefix.
    assert all("Zebra" not in c.embed_text for c in Chunk.objects.filter(section=logistics))
    _wait_document_jobs(document)
    chunks = list(Chunk.objects.filter(section=logistics))
    assert chunks, "the child's chunks are rebuilt"
    assert all("Zebra" not in c.embed_text and "Trucks leave" in c.embed_text for c in chunks)
    assert Section.objects.get(pk=logistics.pk).heading_path == ["Handbook", "Logistics"]
    keyword = search(member=internal, query="zebra", mode="keyword", top_k=10)
    assert keyword.results == [], [r.text for r in keyword.results]
    assert search(member=internal, query="trucks depot", mode="keyword", top_k=3).results
    assert search(member=security, query="zebra", mode="keyword", top_k=3).results
    # The security member's view of Logistics may carry the Zebra title again only through a
    # chunk they can read: the internal member's chunks never do.
    for response in (search(member=internal, query="Project Zebra", mode=m, top_k=10) for m in ("vector", "hybrid")):
        for result in response.results:
            assert "Zebra" not in " ".join(result.heading_path)


def test_reindex_keeps_api_overrides_in_the_prefix(celery_worker, tenant):
    """#4: a new index version builds prefixes from the stored policies (API overrides), not the file's markers."""
    document, logistics = _zebra_setup(tenant)
    _wait_document_jobs(document)
    version, _ = index_version_create(tenant=tenant, config=ChunkingConfig(target_tokens=100), name="v2")
    job = index_version_build(version=version)
    wait_for_jobs([job.id, *job.children.values_list("id", flat=True)])
    built = list(Chunk.objects.filter(section=logistics, index_version=version))
    assert built and all("Zebra" not in c.embed_text for c in built)
    # Re-uploading identical bytes keeps the overrides and the clean prefix too.
    _, again = document_replace(document=document, created_by=None,
                                upload=Upload(content=ZEBRA_DOC.encode(), title="Handbook",
                                              content_type="text/markdown"))
    wait_for_jobs([again.id])
    _wait_document_jobs(document)
    assert all("Zebra" not in c.embed_text for c in Chunk.objects.filter(section=logistics))


SECRET = "The vault combination for the Lisbon office is kept by the duty manager at all times."


def test_embedding_cache_is_not_shared_across_tenants(celery_worker, tenant):
    """#5: tenant B must not learn from its own job that tenant A holds a sentence."""
    _, job_a = _ingest(tenant, f"# Vault\n{SECRET}\n", access_level="restricted", groups=["security-team"])
    assert job_a.status == "succeeded" and job_a.stats["embedded"] >= 1
    other = tenant_create(slug="write-other", name="Other")
    editor = membership_create(tenant=other, email="ed@other.io", role="editor", clearance="restricted")
    _, job_b = _ingest(other, f"# Vault\n{SECRET}\n", created_by=editor, access_level="restricted")
    assert job_b.status == "succeeded", job_b.error
    assert job_b.stats["cache_hits"] == 0 and job_b.stats["embedded"] == job_b.stats["chunks"]


def test_embedding_cache_does_not_reveal_text_above_the_uploaders_access(celery_worker, tenant):
    """#5, inside one tenant: an internal editor who uploads a guessed sentence under a restricted
    marker must not see a cache hit from a restricted section they cannot read; an admin may."""
    text = f"# Vault\n{SECRET}\n"
    _, job = _ingest(tenant, text, access_level="restricted", groups=["security-team"])
    assert job.status == "succeeded", job.error
    editor = membership_create(tenant=tenant, email="ed@w.io", role="editor", clearance="internal")
    probe = f"# Probe\n\n## Vault <!-- access: restricted; groups: security-team -->\n{SECRET}\n"
    _, probing = _ingest(tenant, probe, created_by=editor, title="Probe", access_level="internal")
    assert probing.status == "succeeded", probing.error
    assert probing.stats["cache_hits"] == 0, probing.stats
    # The same text at a policy the editor reads is served from the cache once embedded at it.
    _, first = _ingest(tenant, text, created_by=editor, title="Mine", access_level="internal")
    _, second = _ingest(tenant, text, created_by=editor, title="Mine again", access_level="internal")
    assert first.stats["embedded"] >= 1 and second.stats["cache_hits"] == second.stats["chunks"]
    admin = membership_create(tenant=tenant, email="adm@w.io", role="admin", clearance="internal")
    _, by_admin = _ingest(tenant, text, created_by=admin, title="Admin copy", access_level="restricted",
                          groups=["security-team"])
    assert by_admin.stats["cache_hits"] == by_admin.stats["chunks"]


def test_job_stats_count_only_their_own_document(celery_worker, tenant):
    """Jobs of two tenants planned in one run share model batches; each job's stats count its own document only."""
    other = tenant_create(slug="write-third", name="Third")
    one, _ = _ingest(tenant, "# A\nFirst tenant text about ferries and harbours.\n")
    two, _ = _ingest(other, "# B\nSecond tenant text.\n\n## More\nAnother section with words about trains.\n")
    jobs = []
    for document in (one, two):
        version, _ = index_version_create(tenant=document.tenant, config=ChunkingConfig(target_tokens=90), name="x")
        jobs.append(IngestionJob.objects.create(tenant=document.tenant, document=document, index_version=version))
    totals = pipeline.jobs_run([j.id for j in jobs])
    counts = []
    for job in jobs:
        job.refresh_from_db()
        assert job.status == "succeeded", job.error
        mine = Chunk.objects.filter(document_id=job.document_id, index_version_id=job.index_version_id).count()
        assert job.stats["chunks"] == mine
        counts.append(mine)
    assert totals["chunks"] == sum(counts)


def test_prefix_change_during_a_build_is_replanned(celery_worker, tenant, monkeypatch):
    """#1 and #4 together: a heading restricted while a build embeds its children must not leave
    children chunks with the old prefix, not even until the re-derivation job runs."""
    document, job = _ingest(tenant, ZEBRA_DOC)
    logistics = Section.objects.get(document=document, title="Logistics")
    section_set_access(actor=None, section=logistics, access_level="internal", groups=[])
    _wait_document_jobs(document)
    zebra = Section.objects.get(document=document, title="Project Zebra")
    version, _ = index_version_create(tenant=tenant, config=ChunkingConfig(target_tokens=110), name="race")
    build = IngestionJob.objects.create(tenant=tenant, document=document, index_version=version)
    embedded = _build_racing(monkeypatch, build, lambda: section_set_access(
        actor=None, section=zebra, access_level="restricted", groups=["security-team"]))
    assert build.status == "succeeded", build.error
    assert embedded == 2, "the build planned again after the policy change"
    built = list(Chunk.objects.filter(section=logistics, index_version=version))
    assert built and all("Zebra" not in c.embed_text for c in built)


def test_a_stricter_default_does_not_break_index_builds(celery_worker, tenant):
    """Own policies (markers, overrides) are explicit and persist when the document default changes;
    a later index build reuses the stored policies instead of failing on the file's now-'widening' marker."""
    from kb.services import document_set_access

    text = "---\naccess: internal\n---\n# Guide\nHow to file an expense report on time.\n"
    document, job = _ingest(tenant, text, access_level="internal")
    assert job.status == "succeeded", job.error
    document_set_access(actor=None, document=document, access_level="confidential", groups=[])
    version, _ = index_version_create(tenant=tenant, config=ChunkingConfig(target_tokens=80), name="strict")
    build = index_version_build(version=version)
    children = wait_for_jobs(build.children.values_list("id", flat=True))
    assert [c.status for c in children] == ["succeeded"], [c.error for c in children]
    for chunk in Chunk.objects.filter(document=document).select_related("section"):
        assert (chunk.access_level, chunk.access_groups) == (chunk.section.access_level, chunk.section.access_groups)
    # A new upload of the same file under the stricter default is checked against it, and refused.
    _, again = document_replace(document=document, created_by=None, upload=Upload(
        content=text.encode(), title="Guide", content_type="text/markdown", access_level="confidential"))
    (again,) = wait_for_jobs([again.id])
    assert again.status == "failed" and "would widen" in again.error and "line 2" in again.error


def test_a_job_whose_worker_keeps_dying_fails_after_bounded_attempts(tenant, settings):
    """A poison document that kills its worker (out of memory, a native crash) is re-queued by the
    sweeper; the claim that would exceed BULKHEAD_JOB_MAX_ATTEMPTS fails the job instead of running it."""
    from datetime import timedelta

    from django.utils import timezone

    settings.BULKHEAD_JOB_MAX_ATTEMPTS = 3
    document = Document.objects.create(tenant=tenant, title="poison", content_type="text/markdown", raw=b"# x\n",
                                       sha256="0" * 64)
    stale = timezone.now() - timedelta(hours=2)
    job = IngestionJob.objects.create(tenant=tenant, document=document, status="running", attempts=3,
                                      heartbeat_at=stale, started_at=stale)
    pipeline.jobs_run([job.id])
    job.refresh_from_db()
    assert job.status == "failed" and "gave up after 3 attempts" in job.error
    assert Document.objects.get(pk=document.pk).status == "failed"
    assert not Chunk.objects.filter(document=document).exists()
    # Below the bound a job is simply run again.
    fine = Document.objects.create(tenant=tenant, title="fine", content_type="text/markdown", raw=b"# y\nfine\n",
                                   sha256="1" * 64)
    again = IngestionJob.objects.create(tenant=tenant, document=fine, status="running", attempts=2,
                                        heartbeat_at=stale, started_at=stale)
    pipeline.jobs_run([again.id])
    again.refresh_from_db()
    assert again.status == "succeeded" and again.attempts == 3, again.error


def test_api_overrides_survive_a_content_replacement(celery_worker, tenant):
    """An edit of the text keeps the policies set through the API on the sections it keeps; an
    override whose section is gone fails the job instead of being dropped (it used to widen)."""
    internal = membership_create(tenant=tenant, email="int2@w.io", role="viewer", clearance="internal")
    document, _ = _ingest(tenant, ZEBRA_DOC)
    logistics = Section.objects.get(document=document, title="Logistics")
    section_set_access(actor=None, section=logistics, access_level="confidential", groups=[])
    _wait_document_jobs(document)
    edited = ZEBRA_DOC.replace("every Monday", "every Tuesday")
    _, job = document_replace(document=document, created_by=None, upload=Upload(
        content=edited.encode(), title="Handbook", content_type="text/markdown"))
    (job,) = wait_for_jobs([job.id])
    assert job.status == "succeeded", job.error
    new = Section.objects.get(document=document, title="Logistics")
    assert new.id != logistics.id and new.access_level == AccessLevel.CONFIDENTIAL and new.metadata["override"]
    assert all(c.access_level == AccessLevel.CONFIDENTIAL for c in Chunk.objects.filter(section=new))
    assert not search(member=internal, query="trucks depot Tuesday", mode="keyword", top_k=5).results
    # The overridden section is gone from the new text: refused, the old chunks keep serving.
    before = sorted(Chunk.objects.filter(document=document).values_list("id", flat=True))
    _, job = document_replace(document=document, created_by=None, upload=Upload(
        content=b"# Handbook\nIntro text only.\n", title="Handbook", content_type="text/markdown"))
    (job,) = wait_for_jobs([job.id])
    assert job.status == "failed" and "Logistics" in job.error and "inherit" in job.error
    assert sorted(Chunk.objects.filter(document=document).values_list("id", flat=True)) == before


def test_an_api_override_is_not_carried_over_a_narrower_marker_in_new_content(celery_worker, tenant):
    """Found attacking policies: a section's policy widened through the API (``confidential`` by its marker,
    opened to ``internal``) was carried over to new content whose marker for that section is narrower
    (``restricted``): the new restricted text went to every internal reader, with no one asked. Now the
    file's own policy is recorded per section (``Section.metadata["file_policy"]``) and an override wider
    than the new file's is carried over only when the new file is no narrower than the old one was: else
    the job fails naming the section and the old content keeps serving. A section stored before the file
    policy was recorded has nothing to compare with: an override wider than the new file fails too."""
    internal = membership_create(tenant=tenant, email="int3@w.io", role="viewer", clearance="internal")

    def doc(marker: str, word: str) -> bytes:
        return (f"# Handbook\nIntro text for everyone who works here.\n\n## Logistics <!-- access: {marker} -->\n"
                f"Trucks carry the {word} crates at dawn.\n").encode()

    def replace(content: bytes) -> IngestionJob:
        _, job = document_replace(document=document, created_by=None, upload=Upload(
            content=content, title="Handbook", content_type="text/markdown"))
        (job,) = wait_for_jobs([job.id])
        return job

    def found(word: str) -> bool:
        return bool(search(member=internal, query=word, mode="keyword", top_k=5).results)

    document, _ = _ingest(tenant, doc("confidential", "quokka").decode())
    logistics = Section.objects.get(document=document, title="Logistics")
    assert logistics.metadata["file_policy"] == {"level": int(AccessLevel.CONFIDENTIAL), "groups": []}
    section_set_access(actor=None, section=logistics, access_level="internal", groups=[])  # widened on purpose
    _wait_document_jobs(document)
    assert found("quokka")

    # The new content marks the section narrower: the override is not carried over, the job fails naming it.
    before = sorted(Chunk.objects.filter(document=document).values_list("id", flat=True))
    job = replace(doc("restricted", "wombat"))
    assert job.status == "failed" and "'Handbook > Logistics'" in job.error and "wider" in job.error, job.error
    assert sorted(Chunk.objects.filter(document=document).values_list("id", flat=True)) == before
    assert not found("wombat") and found("quokka")

    # The same marker as the one the admin widened: the override is carried over, as before.
    job = replace(doc("confidential", "numbat"))
    assert job.status == "succeeded", job.error
    new = Section.objects.get(document=document, title="Logistics")
    assert new.metadata["override"] and new.access_level == AccessLevel.INTERNAL and found("numbat")

    # A section stored before file policies were recorded: nothing to compare with, so the override that is
    # wider than the new file's policy fails the job (fail closed) rather than carrying over.
    Section.objects.filter(pk=new.pk).update(metadata={k: v for k, v in new.metadata.items() if k != "file_policy"})
    job = replace(doc("confidential", "bilby"))
    assert job.status == "failed" and "'Handbook > Logistics'" in job.error and "recorded none" in job.error
    assert not found("bilby")
    # Returned to inheriting, the replacement goes through; set again, the override is explicit.
    section_set_access(actor=None, section=Section.objects.get(pk=new.pk), access_level=None, groups=None,
                       inherit=True)
    _wait_document_jobs(document)
    job = replace(doc("restricted", "dingo"))
    assert job.status == "succeeded", job.error
    assert not found("dingo")


def test_section_ids_are_keyed_not_a_plain_hash_of_the_bytes(tenant, settings):
    """A section id must not let a reader confirm a guess of hidden text offline."""
    import hashlib
    import uuid

    from kb.models import ID_NAMESPACE

    raw = b"# Launch\nThe launch code is 4821.\n"
    document = Document.objects.create(tenant=tenant, title="x", content_type="text/markdown", raw=raw,
                                       sha256=hashlib.sha256(raw).hexdigest())
    plain = uuid.uuid5(ID_NAMESPACE, f"section:{document.pk}:{document.sha256}:0")
    keyed = section_id(document, "0")
    assert keyed != plain and keyed == section_id(document, "0")  # still deterministic
    settings.SECRET_KEY = "another-secret"
    assert section_id(document, "0") != keyed
