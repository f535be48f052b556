"""Ingestion throughput benchmark: the real pipeline through a real worker vs a bare ``model.encode``.

Run with ``python manage.py kb_bench ingest [PATH...]``. Prints numbers; asserts nothing.
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
from kb.index_versions import index_version_active
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


def run(paths: list[str], *, min_chunks: int, out: Callable[[str], None]) -> dict:
    tenant = tenant_create(slug=f"bench-ingest-{uuid.uuid4().hex[:8]}", name="ingest benchmark")
    config = ChunkingConfig.from_dict(index_version_active(tenant=tenant).config)
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
    return result
