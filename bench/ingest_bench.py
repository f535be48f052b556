"""Ingestion throughput benchmark: the real pipeline through a real worker vs a bare ``model.encode``.

Run with ``python manage.py kb_bench ingest [PATH...]``. Prints numbers; asserts nothing.

``--set KEY=VALUE`` ingests into a version of the default config with these keys (issue 30: ``piece_weight=0.4``
stores each chunk's pieces); the storage a chunk takes is printed either way. ``--queries FILE.jsonl`` (a golden
set) then times ``kb.search.search`` in vector and hybrid mode over the ingested corpus (query vectors embedded
beforehand, no audit record), p50/p95 of each.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from accounts.models import Tenant
from accounts.services import tenant_create
from bench.private_worker import private_worker
from ingestion.chunking.chunker import chunk_document
from ingestion.chunking.config import ChunkingConfig
from ingestion.parsers import detect_content_type, parse
from kb.embedder import embedder, embedder_name
from kb.index_versions import index_version_activate, index_version_active, index_version_config, index_version_create
from kb.models import EmbeddingCacheEntry, IngestionJob
from kb.services import Upload, batch_create, document_delete


@dataclass
class IngestRun:
    documents: int
    chunks: int
    seconds: float
    model_calls: int
    embedded: int

    @property
    def chunks_per_s(self) -> float:
        return self.chunks / self.seconds

    @property
    def documents_per_s(self) -> float:
        return self.documents / self.seconds


def collect(paths: list[str], min_chunks: int, config: ChunkingConfig) -> tuple[list[Upload], list[str]]:
    """Files in path order until the planned chunks reach ``min_chunks``; returns uploads and embed texts."""
    uploads: list[Upload] = []
    texts: list[str] = []
    files: list[Path] = []
    for raw in paths:
        path = Path(raw)
        files.extend(sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path])
    for path in files:
        data = path.read_bytes()
        content_type = detect_content_type(path.name, data)
        if content_type is None:
            continue
        try:
            chunks = chunk_document(parse(data, content_type=content_type, filename=path.name), config)
        except ValueError:
            continue
        uploads.append(Upload(content=data, title=path.name, source=str(path.resolve()), content_type=content_type))
        texts.extend(c.embed_text for c in chunks)
        if len(texts) >= min_chunks:
            break
    return uploads, texts


def _run_batch(tenant: Tenant, uploads: list[Upload]) -> IngestRun:
    started = time.perf_counter()
    batch = batch_create(tenant=tenant, created_by=None, uploads=uploads)
    while True:
        batch.refresh_from_db()
        if batch.status in (IngestionJob.Status.SUCCEEDED, IngestionJob.Status.FAILED):
            break
        time.sleep(0.05)
    seconds = time.perf_counter() - started
    children = list(IngestionJob.objects.filter(batch=batch))
    failed = [c for c in children if c.status != IngestionJob.Status.SUCCEEDED]
    if failed:
        raise RuntimeError(f"{len(failed)} documents failed, e.g. {failed[0].error}")
    # Each task reports the stats of its whole group of documents; count each group once.
    groups = {c.stats.get("task_id"): c.stats for c in children}
    return IngestRun(
        documents=len(children),
        chunks=sum(c.total for c in children),
        seconds=seconds,
        model_calls=sum(s.get("model_calls", 0) for s in groups.values()),
        embedded=sum(s.get("embedded", 0) for s in groups.values()),
    )


def storage(version_id) -> dict:
    """Bytes a chunk of the version takes: its vector, its pieces (stored out of line, ``kb/migrations/0009``),
    the pieces per chunk, and the whole row as stored (``pg_column_size`` of the row: toasted values count as
    their pointer)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*), avg(pg_column_size(embedding)), avg(coalesce(pg_column_size(pieces), 0)), "
            "avg(coalesce(octet_length(pieces), 0)) / 768.0, avg(pg_column_size(c.*)) "
            "FROM kb_chunk c WHERE index_version_id = %s", [version_id])
        chunks, vector, pieces, per_chunk, row = cursor.fetchone()
    return {"chunks": chunks, "vector_bytes": round(float(vector), 1), "pieces_bytes": round(float(pieces), 1),
            "pieces_per_chunk": round(float(per_chunk), 2), "row_bytes": round(float(row), 1)}


def search_latency(tenant: Tenant, queries: str, out: Callable[[str], None], rounds: int = 3) -> dict:
    """p50/p95 of ``search()`` (vector and hybrid, top 5) over the golden set's questions, ``rounds`` times each."""
    import json

    from accounts.services import membership_create
    from kb import retrieval
    from kb.search import search

    questions = [json.loads(line)["question"] for line in Path(queries).read_text().splitlines() if line.strip()]
    member = membership_create(tenant=tenant, email=f"bench@{tenant.slug}.invalid", role="admin",
                               clearance="restricted")
    vectors = embedder().embed(questions)
    result = {}
    for mode in ("vector", "hybrid"):
        for question, vector in zip(questions[:5], vectors[:5], strict=False):  # warm-up
            search(member=member, query=question, mode=mode, query_vector=vector, audit=False)
        times, retrieve = [], []
        for _ in range(rounds):
            retrieval.count_cache.clear()
            for question, vector in zip(questions, vectors, strict=True):
                started = time.perf_counter()
                response = search(member=member, query=question, mode=mode, query_vector=vector, audit=False)
                times.append((time.perf_counter() - started) * 1000)
                retrieve.append(response.timings_ms["retrieve"])  # the retrieval step alone (pieces re-score in it)
        (p50, p95), (r50, r95) = _percentiles(times), _percentiles(retrieve)
        result[mode] = {"p50_ms": round(p50, 2), "p95_ms": round(p95, 2), "retrieve_p50_ms": round(r50, 2),
                        "retrieve_p95_ms": round(r95, 2), "searches": len(times)}
        out(f"search {mode:<7} p50 {p50:6.2f} ms  p95 {p95:6.2f} ms; retrieval p50 {r50:6.2f} ms  p95 {r95:6.2f} ms "
            f"({len(times)} searches)")
    return result


def _percentiles(values: list[float]) -> tuple[float, float]:
    ordered = sorted(values)
    return ordered[len(ordered) // 2], ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]


def run(paths: list[str], *, min_chunks: int, out: Callable[[str], None], settings: list[str] = (),
        queries: str = "") -> dict:
    tenant = tenant_create(slug=f"bench-ingest-{uuid.uuid4().hex[:8]}", name="ingest benchmark")
    if settings:  # the tenant's first version, active before anything is ingested (so ingestion writes it)
        version, _ = index_version_create(tenant=tenant, config=index_version_config(settings=settings),
                                          name=" ".join(settings)[:100])
        index_version_activate(version=version)
    active = index_version_active(tenant=tenant)
    config = ChunkingConfig.from_dict(active.config)
    out(f"version {active.short_id} ({' '.join(settings) or 'the default config'})")
    uploads, texts = collect(paths, min_chunks, config)
    megabytes = sum(len(u.content) for u in uploads) / 1e6
    out(f"corpus: {len(uploads)} documents, {megabytes:.1f} MB, {len(texts)} chunks planned")

    # A fair first ingest: nothing of this corpus may already sit in the embedding cache.
    from ingestion.chunking.chunker import content_hash

    hashes = [content_hash(config.model, t) for t in texts]
    EmbeddingCacheEntry.objects.filter(model=embedder_name(), content_hash__in=hashes).delete()

    with private_worker("bench-ingest"):
        first = _run_batch(tenant, uploads)
        again = _run_batch(tenant, uploads)

    stored = storage(active.pk)
    latency = search_latency(tenant, queries, out) if queries else {}

    model = embedder()
    model.embed(texts[:8])  # warm-up, as the worker had loaded its model before timing
    started = time.perf_counter()
    model.embed(texts)
    bare_seconds = time.perf_counter() - started

    for document in tenant.documents.all():
        document_delete(document=document)
    tenant.delete()

    bare_rate = len(texts) / bare_seconds
    result = {
        "documents": first.documents,
        "chunks": first.chunks,
        "megabytes": round(megabytes, 2),
        "device": model.device,
        "batch_size": model.batch_size,
        "pipeline_seconds": round(first.seconds, 2),
        "pipeline_chunks_per_s": round(first.chunks_per_s, 1),
        "pipeline_documents_per_s": round(first.documents_per_s, 2),
        "pipeline_model_calls": first.model_calls,
        "bare_encode_seconds": round(bare_seconds, 2),
        "bare_encode_chunks_per_s": round(bare_rate, 1),
        "pipeline_vs_bare": round(first.chunks_per_s / bare_rate, 3),
        "reingest_seconds": round(again.seconds, 2),
        "reingest_model_calls": again.model_calls,
        "reingest_speedup": round(first.seconds / again.seconds, 1),
        "version": active.short_id,
        "settings": list(settings),
        "storage": stored,
        "search": latency,
    }
    out("")
    out(f"{'':<34}{'seconds':>9}{'docs/s':>9}{'chunks/s':>10}{'model calls':>13}")
    out(f"{'pipeline, first ingest':<34}{first.seconds:>9.1f}{first.documents_per_s:>9.2f}{first.chunks_per_s:>10.1f}"
        f"{first.model_calls:>13}")
    out(f"{'bare model.encode, same texts':<34}{bare_seconds:>9.1f}{'':>9}{bare_rate:>10.1f}{'':>13}")
    out(f"{'pipeline, unchanged re-ingest':<34}{again.seconds:>9.1f}{again.documents_per_s:>9.2f}"
        f"{again.chunks_per_s:>10.1f}{again.model_calls:>13}")
    out("")
    out(f"pipeline / bare encode: {result['pipeline_vs_bare']:.3f} (target >= 0.85)")
    out(f"re-ingest speed-up:     {result['reingest_speedup']:.1f}x (target >= 20x)")
    out(f"storage per chunk: vector {stored['vector_bytes']:.0f} B, pieces {stored['pieces_bytes']:.0f} B "
        f"({stored['pieces_per_chunk']:.2f} a chunk), row as stored {stored['row_bytes']:.0f} B")
    return result
