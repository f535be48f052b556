"""Index versions: shadow builds beside live searches, atomic activation, a build killed mid-way and
resumed, the guard that keeps a build off the active version's chunks, the command and the API.

Everything goes through real workers; the kill test routes builds to a private queue.
"""

from __future__ import annotations

import threading
import time
from datetime import timedelta

import pytest
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from accounts.errors import Conflict, NotFound
from accounts.services import api_token_create, membership_create, tenant_create
from bench.private_worker import routed_to
from ingestion.chunking.config import ChunkingConfig
from kb import index_versions as versions
from kb.index_versions import index_version_active
from kb.models import Chunk, Document, IndexVersion, IngestionJob, Section
from kb.search import search
from kb.services import Upload, document_create, document_replace
from pipeline.services import jobs_requeue_stuck, jobs_run
from tests.bounds import JOB_WAIT, START_WAIT
from tests.ingestion_helpers import wait_for_jobs

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.worker]

TOPICS = [
    ("Billing", "invoices refunds payment cards currency ledger reconciliation tax receipts"),
    ("Security", "passwords tokens encryption incident response audit firewall keys rotation"),
    ("Onboarding", "laptop accounts mentor handbook training benefits payroll badge orientation"),
]
QUERIES = ["how are refunds reconciled", "incident response and key rotation", "new hire laptop and mentor"]


def _markdown(title: str, words: str, n: int = 4) -> str:
    vocab = words.split()
    out = [f"# {title}\n"]
    for s in range(n):
        out.append(f"\n## {title} part {s + 1}\n")
        for p in range(3):
            sentence = " ".join(vocab[(s * 5 + p * 3 + j) % len(vocab)] for j in range(18))
            out.append(f"\nThe {title.lower()} team writes about {sentence}. It also notes {sentence[::-1][:40]}.\n")
    return "".join(out)


def _ingest(tenant, docs: dict[str, str]) -> list[Document]:
    jobs, documents = [], []
    for source, text in docs.items():
        document, job = document_create(
            tenant=tenant, created_by=None,
            upload=Upload(content=text.encode(), title=source, source=source, content_type="text/markdown"),
        )
        jobs.append(job.id)
        documents.append(document)
    assert all(j.status == "succeeded" for j in wait_for_jobs(jobs)), "ingestion failed"
    return documents


@pytest.fixture
def kb_tenant(celery_worker):
    tenant = tenant_create(slug="versions-co", name="Versions Co")
    admin = membership_create(tenant=tenant, email="admin@versions.io", role="admin", clearance="restricted")
    _ingest(tenant, {f"{title.lower()}.md": _markdown(title, words) for title, words in TOPICS})
    return tenant, admin


def _ids(response) -> list:
    return [h.chunk_id for h in response.results]


def _small(tenant) -> IndexVersion:
    config = versions.index_version_config(settings=["target_tokens=40", "overlap=0"])
    version, created = versions.index_version_create(tenant=tenant, config=config, name="small")
    assert created
    return version


def _build_and_wait(version, timeout=JOB_WAIT) -> IngestionJob:
    job = versions.index_version_build(version=version)
    return wait_for_jobs([job.id], timeout=timeout)[0]


# ----------------------------------------------------------------------------- build beside live searches


def test_shadow_build_leaves_active_searches_unchanged_then_activation_flips_them(kb_tenant):
    tenant, admin = kb_tenant
    active = index_version_active(tenant=tenant)
    before = {q: _ids(search(member=admin, query=q, top_k=5, mode="vector")) for q in QUERIES}
    active_chunks = set(Chunk.objects.filter(index_version=active).values_list("id", flat=True))

    shadow = _small(tenant)
    job = versions.index_version_build(version=shadow)
    seen = 0
    while IngestionJob.objects.get(pk=job.pk).status not in ("succeeded", "failed"):
        for q in QUERIES:
            assert _ids(search(member=admin, query=q, top_k=5, mode="vector")) == before[q]
            seen += 1
    assert seen, "the build ended before any search ran beside it"
    job.refresh_from_db()
    shadow.refresh_from_db()
    assert (job.status, job.done, job.total) == ("succeeded", 3, 3)
    assert shadow.status == "ready" and not shadow.is_active
    # The build wrote only the shadow version: the active chunk set is exactly what it was.
    assert set(Chunk.objects.filter(index_version=active).values_list("id", flat=True)) == active_chunks
    shadow_chunks = set(Chunk.objects.filter(index_version=shadow).values_list("id", flat=True))
    assert len(shadow_chunks) > 2 * len(active_chunks), "the shadow config should cut visibly smaller chunks"
    after_shadow = {q: _ids(search(member=admin, query=q, top_k=5, mode="vector", index_version=shadow))
                    for q in QUERIES}
    assert all(set(ids) <= shadow_chunks for ids in after_shadow.values())

    # Activation flips every search at once: a concurrent searcher sees either the old or the new
    # results, never a mix, and after the flip only the new ones.
    mixed, stop = [], threading.Event()

    def searcher():
        from django.db import connection

        try:
            while not stop.is_set():
                for q in QUERIES:
                    ids = _ids(search(member=admin, query=q, top_k=5, mode="vector"))
                    if ids not in (before[q], after_shadow[q]):
                        mixed.append((q, ids))
        finally:
            connection.close()

    thread = threading.Thread(target=searcher)
    thread.start()
    time.sleep(0.3)
    versions.index_version_activate(version=shadow)
    time.sleep(0.3)
    stop.set()
    thread.join(START_WAIT)
    assert not mixed
    assert {q: _ids(search(member=admin, query=q, top_k=5, mode="vector")) for q in QUERIES} == after_shadow
    assert index_version_active(tenant=tenant).pk == shadow.pk
    assert IndexVersion.objects.get(pk=active.pk).is_active is False


def test_activate_refuses_unbuilt_and_drop_refuses_active(kb_tenant):
    tenant, admin = kb_tenant
    active = index_version_active(tenant=tenant)
    shadow = _small(tenant)
    with pytest.raises(Conflict, match="not built for every ready document"):
        versions.index_version_activate(version=shadow)
    with pytest.raises(Conflict, match="active version cannot be dropped"):
        versions.index_version_drop(version=active)
    assert index_version_active(tenant=tenant).pk == active.pk

    # --force overrides; then the old version is the one that may be dropped.
    versions.index_version_activate(version=shadow, force=True)
    assert index_version_active(tenant=tenant).pk == shadow.pk
    assert search(member=admin, query=QUERIES[0], top_k=5).results == []  # nothing built: that is what force means
    chunks = Chunk.objects.filter(index_version=active).count()
    assert versions.index_version_drop(version=active) == chunks > 0
    assert not IndexVersion.objects.filter(pk=active.pk).exists()


def test_build_never_touches_active_chunks_of_a_changed_document(kb_tenant, monkeypatch):
    tenant, _ = kb_tenant
    active = index_version_active(tenant=tenant)
    billing = Document.objects.get(tenant=tenant, source="billing.md")
    active_chunks = set(Chunk.objects.filter(index_version=active).values_list("id", flat=True))
    sections = set(Section.objects.filter(document=billing).values_list("id", flat=True))

    # New content whose ingestion has not run yet (its task is never sent).
    with monkeypatch.context() as patch:
        patch.setattr("kb.jobs.enqueue_jobs", lambda ids: None)
        document_replace(document=billing, created_by=None, upload=Upload(
            content=_markdown("Billing", "entirely new words about chargebacks disputes").encode(),
            title="billing.md", source="billing.md", content_type="text/markdown"))

    shadow = _small(tenant)
    job = _build_and_wait(shadow)
    report = versions.index_version_build_report(job=job)
    assert (job.total, report["left_out"]) == (2, 1)  # the pending document is left out and reported

    # The guard itself: a build job for the changed document is skipped, not stored.
    child = IngestionJob.objects.create(tenant=tenant, document=billing, index_version=shadow)
    jobs_run([child.id])
    child.refresh_from_db()
    assert child.status == "succeeded" and "content changed" in child.stats.get("skipped", ""), (child.status, child.stats, child.error)
    billing.refresh_from_db()
    assert billing.status == "pending"  # the document's own state belongs to its own ingestion
    assert set(Section.objects.filter(document=billing).values_list("id", flat=True)) == sections
    assert set(Chunk.objects.filter(index_version=active).values_list("id", flat=True)) == active_chunks
    assert not Chunk.objects.filter(index_version=shadow, document=billing).exists()
    with pytest.raises(Conflict):
        versions.index_version_activate(version=shadow)


# ----------------------------------------------------------------------------- kill and resume


QUEUE = "index-build-crash"
REPORTS = 24  # two tasks' worth of documents (kb.jobs.JOBS_PER_TASK): the kill lands inside the first


def test_build_killed_mid_way_resumes_to_the_same_chunks(celery_worker, worker_factory):
    tenant = tenant_create(slug="resume-co", name="Resume Co")
    words = "harbour ledger copper river signal meadow lantern orbit granite velvet pylon quarry"
    _ingest(tenant, {f"r{i}.md": _markdown(f"Report {i}", words[i:] + " " + words[:i], n=2) for i in range(REPORTS)})
    shadow = _small(tenant)

    env = {"BULKHEAD_TASK_VISIBILITY_TIMEOUT": "5", "BULKHEAD_JOB_LEASE_SECONDS": "5"}
    with routed_to(QUEUE):
        first = worker_factory("build-a", extra_env=env, queues=QUEUE)
        job = versions.index_version_build(version=shadow)
        deadline = time.monotonic() + JOB_WAIT
        while IngestionJob.objects.get(pk=job.pk).done < 6:
            assert time.monotonic() < deadline, "the first worker made no progress"
            time.sleep(0.05)
        first.kill()
        killed_at = IngestionJob.objects.get(pk=job.pk).done
        assert killed_at < REPORTS, "the build finished before the kill; the test proves nothing"

        # Resume before a new worker exists: otherwise it could finish the redelivered task first,
        # and "resume" would find nothing left to resume.
        again = versions.index_version_build(version=shadow)  # resume: same job, unfinished children re-sent
        assert again.pk == job.pk
        worker_factory("build-b", extra_env=env, queues=QUEUE)
        finished = wait_for_jobs([job.id], timeout=2 * JOB_WAIT)[0]
    assert (finished.status, finished.done, finished.total) == ("succeeded", REPORTS, REPORTS)
    resumed = {d: set() for d in Document.objects.filter(tenant=tenant).values_list("id", flat=True)}
    for document_id, chunk_id in Chunk.objects.filter(index_version=shadow).values_list("document_id", "id"):
        resumed[document_id].add(chunk_id)

    # The same version built without interruption (drop, create again: same id) gives the same chunk ids.
    versions.index_version_drop(version=shadow)
    shadow = _small(tenant)
    assert _build_and_wait(shadow).status == "succeeded"
    clean = {d: set() for d in resumed}
    for document_id, chunk_id in Chunk.objects.filter(index_version=shadow).values_list("document_id", "id"):
        clean[document_id].add(chunk_id)
    assert resumed == clean and all(clean.values())
    jobs_requeue_stuck(older_than=timedelta(seconds=5))  # nothing of this build is left stuck
    assert not IngestionJob.objects.filter(tenant=tenant, status__in=["queued", "running"]).exists()


def test_build_again_skips_built_documents(kb_tenant):
    tenant, _ = kb_tenant
    shadow = _small(tenant)
    assert _build_and_wait(shadow).total == 3
    ids = set(Chunk.objects.filter(index_version=shadow).values_list("id", flat=True))
    again = _build_and_wait(shadow)
    assert (again.status, again.total) == ("succeeded", 0)
    assert set(Chunk.objects.filter(index_version=shadow).values_list("id", flat=True)) == ids


# Thirty segments: too large a table to stay one chunk under the default's ``table_rows_over`` (issue 30,
# tenth round), so the default still cuts it one row per chunk.
SEGMENT_ROWS = [f"Segment {chr(65 + i // 10)}{i % 10} | {400 + 7.5 * i:.1f} | {420 + 8.25 * i:.2f}" for i in range(30)]
REPORT = (
    "Annual report. " + "The group grew in every region and opened new sites in three countries. " * 12
    + "The figures for revenue by segment, in millions of euros, are set out below.\n"
    "Segment | 2023 | 2024\n" + "\n".join(SEGMENT_ROWS) + "\n\n"
    "The board proposes a dividend of 40 cents per share.\n"
)
ROWS = ["Segment | 2023 | 2024\n" + SEGMENT_ROWS[0], *SEGMENT_ROWS[1:]]


def test_a_tenant_on_the_previous_default_reaches_the_new_one_by_a_shadow_build(celery_worker):
    """Issue 30 changed the default (bare-row tables one row per chunk): a version stored before
    keeps its config and its id, and the new default is a new version that a shadow build fills."""
    tenant = tenant_create(slug="versions-previous", name="Previous Co")
    stored = {k: v for k, v in ChunkingConfig(table_rows=False).as_dict().items()
              if k not in ("table_rows", "topic_sentence", "table_delimiter_rows", "markdown_table_rows",
                           "table_row_labels")}
    # ^ what an index version stored before
    previous = ChunkingConfig.from_dict(stored)
    assert previous.table_rows is False
    old, _ = versions.index_version_create(tenant=tenant, config=previous, name="previous default")
    versions.index_version_activate(version=old)
    document, job = document_create(
        tenant=tenant, created_by=None,
        upload=Upload(content=REPORT.encode(), title="report", source="report.txt", content_type="text/plain"),
    )
    assert wait_for_jobs([job.id])[0].status == "succeeded"
    assert Chunk.objects.filter(index_version=old).exists()
    assert not Chunk.objects.filter(index_version=old, text__in=ROWS).exists()

    config = versions.index_version_config()  # what `kb_index create` makes without --set
    assert config == ChunkingConfig() and config.config_hash() != old.config_hash
    new, created = versions.index_version_create(tenant=tenant, config=config, name="issue-30 default")
    assert created and new.pk != old.pk and not new.is_active
    assert _build_and_wait(new).status == "succeeded"
    rows = Chunk.objects.filter(index_version=new, text__in=ROWS).order_by("start")
    assert [c.text for c in rows] == ROWS  # one chunk per row, the header in the first row's span
    # each row embeds the lead-in and its cells with their column labels (table_row_labels, issue 30's fourteenth round)
    assert all("revenue by segment" in c.embed_text and "; 2024 " in c.embed_text and ": 2023 " in c.embed_text
               for c in rows)
    assert not Chunk.objects.filter(index_version=old, text__in=ROWS).exists(), "the build touched the active"
    versions.index_version_activate(version=new)
    assert index_version_active(tenant=tenant).pk == new.pk


LOCKS = (
    "Process locks differ by platform. Their features are as follows:\n\n"
    "| lock | reentrant | preference |\n|------|-----------|------------|\n"
    "| fcntl | no | reader |\n| LockFileEx | yes | reader |\n| ReaderWriterLock | yes | writer |\n\n"
    "Threads made by other means need their own identification functions.\n"
)
LOCK_HEADER = "| lock | reentrant | preference |\n|------|-----------|------------|"
LOCK_ROWS = [LOCK_HEADER + "\n| fcntl | no | reader |", "| LockFileEx | yes | reader |",
             "| ReaderWriterLock | yes | writer |"]


def test_a_tenant_before_markdown_row_chunks_reaches_them_by_a_shadow_build(celery_worker):
    """The third round of issue 30 made ``markdown_table_rows`` the default (a Markdown table of words,
    one chunk per row): a version stored before keeps its config, its id and its whole-table chunk, and
    the new default is a new version that a shadow build fills with row chunks."""
    tenant = tenant_create(slug="versions-mdrows", name="Rows Co")
    stored = {k: v for k, v in ChunkingConfig().as_dict().items() if k not in ("markdown_table_rows", "table_row_labels")}
    previous = ChunkingConfig.from_dict(stored)  # what an index version stored before the change reads as
    assert previous.markdown_table_rows is False and previous == ChunkingConfig(markdown_table_rows=False, table_row_labels=False)
    old, _ = versions.index_version_create(tenant=tenant, config=previous, name="before markdown rows")
    assert old.config_hash == previous.config_hash()
    versions.index_version_activate(version=old)
    document, job = document_create(
        tenant=tenant, created_by=None,
        upload=Upload(content=LOCKS.encode(), title="locks", source="locks.md.txt", content_type="text/plain"),
    )
    assert wait_for_jobs([job.id])[0].status == "succeeded"
    assert Chunk.objects.filter(index_version=old, text__contains="| ReaderWriterLock | yes | writer |").exists()
    assert not Chunk.objects.filter(index_version=old, text__in=LOCK_ROWS).exists()

    config = versions.index_version_config()  # what `kb_index create` makes without --set
    assert config == ChunkingConfig() and config.markdown_table_rows and config.config_hash() != old.config_hash
    new, created = versions.index_version_create(tenant=tenant, config=config, name="third-round default")
    assert created and new.pk != old.pk and not new.is_active
    assert _build_and_wait(new).status == "succeeded"
    rows = Chunk.objects.filter(index_version=new, text__in=LOCK_ROWS).order_by("start")
    assert [c.text for c in rows] == LOCK_ROWS  # one chunk per row, the header in the first row's span
    # the header's words in every row (its delimiter row compacted to |---|: the sixth round's default)
    assert all("reentrant" in c.embed_text and "preference" in c.embed_text for c in rows)  # labels (table_row_labels)
    assert not Chunk.objects.filter(index_version=old, text__in=LOCK_ROWS).exists(), "the build touched the active"
    versions.index_version_activate(version=new)
    assert index_version_active(tenant=tenant).pk == new.pk


PADDED_HEADER = (
    "| Feature" + " " * 52 + "| Chardet" + " " * 52 + "|" + " " * 50 + "Charset Normalizer" + " " * 50 + "|\n"
    "|" + "-" * 60 + "|:" + "-" * 58 + ":|:" + "-" * 116 + ":|"
)
PADDED_ROWS = [
    "| `" + name + "`" + " " * (57 - len(name)) + "|" + " " * 29 + a + " " * 29 + "|" + " " * 58 + b + " " * 58 + "|"
    for name, a, b in [("Fast", "yes", "yes"), ("Universal", "no", "yes"), ("Whl Size", "1500 kB", "250 kB")]
]
PADDED = (
    "A comparison with the other detector. The detectors differ as follows:\n\n"
    + PADDED_HEADER + "\n" + "\n".join(PADDED_ROWS) + "\n\nBoth detectors are maintained.\n"
)


def _stored_before_then_shadow_build(*, slug: str, dropped: tuple[str, ...], old_hash: str, upload: Upload):
    """A version stored before the fields ``dropped`` existed (a config without their keys), active and
    holding ``upload``; then the default (what ``kb_index create`` makes without --set) as a new version,
    built in the shadow of the active one. Returns (old version, new version), the new one not active."""
    tenant = tenant_create(slug=slug, name=slug)
    stored = {k: v for k, v in ChunkingConfig().as_dict().items() if k not in dropped}
    previous = ChunkingConfig.from_dict(stored)  # what an index version stored before the change reads as
    assert previous.config_hash().startswith(old_hash)
    old, _ = versions.index_version_create(tenant=tenant, config=previous, name="stored before")
    assert old.config_hash == previous.config_hash()
    versions.index_version_activate(version=old)
    _document, job = document_create(tenant=tenant, created_by=None, upload=upload)
    assert wait_for_jobs([job.id])[0].status == "succeeded"
    config = versions.index_version_config()
    assert config == ChunkingConfig() and config.config_hash() != old.config_hash
    new, created = versions.index_version_create(tenant=tenant, config=config, name="the new default")
    assert created and new.pk != old.pk and not new.is_active
    assert _build_and_wait(new).status == "succeeded"
    return old, new


def test_a_tenant_before_compact_table_headers_reaches_them_by_a_shadow_build(celery_worker):
    """The sixth round of issue 30 made ``compact_table_header`` the default (a column-padded Markdown
    table gets one chunk per row, its delimiter row compacted in the embedded header): a version stored
    before keeps its config, its id and its chunks, and the new default is a new version that a shadow
    build fills with row chunks."""
    old, new = _stored_before_then_shadow_build(
        slug="versions-padded", dropped=("compact_table_header", "table_rows_over", "table_label_columns", "piece_weight", "table_row_labels"),
        old_hash="22a414f1b4de",
        upload=Upload(content=PADDED.encode(), title="detectors", source="detectors.md.txt", content_type="text/plain"),
    )
    row_texts = [PADDED_HEADER + "\n" + PADDED_ROWS[0], *PADDED_ROWS[1:]]  # one chunk per row, header in the first
    assert Chunk.objects.filter(index_version=old).exists()
    assert not Chunk.objects.filter(index_version=old, text__in=row_texts).exists()  # the padded header did not fit
    rows = list(Chunk.objects.filter(index_version=new, text__in=row_texts).order_by("start"))
    assert [c.text for c in rows] == row_texts
    assert all("Charset Normalizer" in c.embed_text for c in rows)  # a column label on every row (table_row_labels)
    assert not Chunk.objects.filter(index_version=old, text__in=row_texts).exists(), "the build touched the active"
    versions.index_version_activate(version=new)
    assert index_version_active(tenant=new.tenant).pk == new.pk


SMALL_TABLE = "Year | Cement sold (kt) | EBITDA (£m)\n2021 | 1,410 | 61.2\n2022 | 1,455 | 64.0\n2023 | 1,502 | 66.9"


def test_a_tenant_before_whole_small_tables_reaches_them_by_a_shadow_build(celery_worker):
    """The tenth round of issue 30 made ``table_rows_over=192`` the default (a small bare-row table stays one
    chunk): a version stored before keeps its row chunks and its hash (the sixth round's ``7c01f80ad24d``);
    the new default is a new version whose shadow build holds the table whole, with its lead-in."""
    text = "Our five-year record is set out below.\n" + SMALL_TABLE + "\nVolumes grew in every year.\n"
    old, new = _stored_before_then_shadow_build(
        slug="versions-small-table", dropped=("table_rows_over", "table_label_columns", "piece_weight", "table_row_labels"), old_hash="7c01f80ad24d",
        upload=Upload(content=text.encode(), title="record", source="record.txt", content_type="text/plain"),
    )
    lines = SMALL_TABLE.split("\n")
    rows = ["\n".join(lines[:2]), *lines[2:]]  # one chunk per row, the header in the first row's span
    assert sorted(Chunk.objects.filter(index_version=old, text__in=rows).values_list("text", flat=True)) == sorted(rows)
    assert not Chunk.objects.filter(index_version=new, text__in=rows).exists()
    (whole,) = Chunk.objects.filter(index_version=new, text=SMALL_TABLE)
    assert "Our five-year record is set out below." in whole.embed_text
    assert Chunk.objects.filter(index_version=old, text__in=rows).count() == 3, "the build touched the active"
    assert not Chunk.objects.filter(index_version=old, text=SMALL_TABLE).exists()


# ----------------------------------------------------------------------------- the command


def test_kb_index_command_create_list_build_activate_drop(kb_tenant, capsys):
    tenant, _ = kb_tenant
    call_command("kb_index", "create", "--tenant", tenant.slug, "--set", "target_tokens=64", "--name", "sixty-four")
    short = capsys.readouterr().out.strip()
    version = IndexVersion.objects.get(tenant=tenant, config_hash__startswith=short)
    assert len(short) == 12 and version.config["target_tokens"] == 64 and version.config["embedding_dimensions"] == 384
    call_command("kb_index", "build", short, "--tenant", tenant.slug, "--wait", "--timeout", str(JOB_WAIT))
    assert "build succeeded: 3/3" in capsys.readouterr().out
    call_command("kb_index", "list", "--tenant", tenant.slug)
    listing = capsys.readouterr().out
    assert short in listing and "ready" in listing and "sixty-four" in listing
    call_command("kb_index", "activate", str(version.id), "--tenant", tenant.slug)
    assert short in capsys.readouterr().out
    with pytest.raises(CommandError, match="cannot be dropped"):
        call_command("kb_index", "drop", short, "--tenant", tenant.slug)
    other = tenant_create(slug="versions-other", name="Other")
    with pytest.raises(CommandError, match="Not found"):
        call_command("kb_index", "activate", short, "--tenant", other.slug)
    with pytest.raises(CommandError, match="target_tokens must be of type int"):
        call_command("kb_index", "create", "--tenant", tenant.slug, "--set", "target_tokens=big")


def test_config_hash_of_existing_configs_is_unchanged_by_embedding_dimensions():
    import hashlib
    import json

    from ingestion.chunking.config import ADDED_OFF, HASH_STABLE_DEFAULTS

    # A config stored before any of the later keys existed: the hash of exactly its old keys.
    stored = ChunkingConfig(**ADDED_OFF)
    legacy = {k: v for k, v in stored.as_dict().items() if k not in HASH_STABLE_DEFAULTS}
    expected = hashlib.sha256(json.dumps(legacy, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
    assert stored.config_hash() == expected
    assert ChunkingConfig.from_dict(legacy) == stored
    assert ChunkingConfig(**ADDED_OFF, embedding_dimensions=768).config_hash() != expected


# ----------------------------------------------------------------------------- the API


def test_index_version_api_admins_only_and_same_404_for_other_tenants(kb_tenant):
    tenant, admin = kb_tenant
    other = tenant_create(slug="versions-api-other", name="Other")
    other_version, _ = versions.index_version_create(tenant=other, config=ChunkingConfig(target_tokens=100))
    clients = {}
    for name, role in (("admin", None), ("editor", "editor"), ("viewer", "viewer")):
        membership = admin if role is None else membership_create(
            tenant=tenant, email=f"{name}@versions.io", role=role, clearance="restricted")
        _, key = api_token_create(membership=membership)
        clients[name] = APIClient()
        clients[name].credentials(HTTP_AUTHORIZATION=f"Token {key}")

    assert APIClient().get("/api/v1/index-versions/").status_code == 401
    for name in ("editor", "viewer"):
        assert clients[name].get("/api/v1/index-versions/").status_code == 403
        assert clients[name].post("/api/v1/index-versions/", {"config": {}}, format="json").status_code == 403
    assert IndexVersion.objects.filter(tenant=tenant).count() == 1  # refused calls changed nothing

    api = clients["admin"]
    listed = api.get("/api/v1/index-versions/").json()
    rows = listed["results"] if isinstance(listed, dict) else listed
    assert [(r["is_active"], r["document_count"]) for r in rows] == [(True, 3)]
    created = api.post("/api/v1/index-versions/", {"config": {"target_tokens": 40, "overlap": 0}, "name": "small"},
                       format="json")
    assert created.status_code == 201, created.content
    body = created.json()
    assert body["status"] == "empty" and body["config"]["target_tokens"] == 40
    bad = api.post("/api/v1/index-versions/", {"config": {"target_tokens": "x"}}, format="json")
    assert bad.status_code == 400
    refused = api.post(f"/api/v1/index-versions/{body['short_id']}/activate/", {}, format="json")
    assert refused.status_code == 409

    job = api.post(f"/api/v1/index-versions/{body['id']}/build/")
    assert job.status_code == 202 and job.json()["kind"] == "reindex"
    assert wait_for_jobs([job.json()["id"]])[0].status == "succeeded"
    activated = api.post(f"/api/v1/index-versions/{body['id']}/activate/", {}, format="json")
    assert activated.status_code == 200 and activated.json()["is_active"] is True
    assert activated.json()["chunk_count"] > 0

    # Another tenant's version, an unknown id and a malformed one: the same 404.
    answers = [
        api.post(f"/api/v1/index-versions/{ref}/build/").json()
        for ref in (other_version.id, other_version.short_id, "0" * 12, "not-an-id")
    ]
    assert all(a == answers[0] for a in answers) and answers[0]["error"]["code"] == "not_found"
    with pytest.raises(NotFound):
        versions.index_version_get(tenant=tenant, ref=str(other_version.id))

    # Search on a chosen version: admins only.
    search_body = {"query": QUERIES[0], "index_version": str(other_version.id)}
    assert api.post("/api/v1/search/", search_body, format="json").status_code == 404
    search_body["index_version"] = body["id"]
    assert api.post("/api/v1/search/", search_body, format="json").status_code == 200
    assert clients["viewer"].post("/api/v1/search/", search_body, format="json").status_code == 403
