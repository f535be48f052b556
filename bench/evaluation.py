"""``kb_eval``'s side of retrieval evaluation: Markdown tables, genres, JSON, the PNG chart, and a
throwaway tenant built from a folder of corpora.

The evaluation itself -- golden questions through the real search, per index version and
depth -- is product code in :mod:`kb.evaluation` (the console runs it too).
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from accounts.errors import ApplicationError
from accounts.models import Membership, Tenant
from ingestion.quality import Summary
from kb.evaluation import (
    ALL,
    VersionReport,
    chart_bars,
    metric_rows,
    percent,
)
from kb.evaluation import golden_resolve as golden_resolve  # re-exported: it lived here first
from kb.index_versions import config_summary
from kb.models import Document, IndexVersion, IngestionJob

# ----------------------------------------------------------------------------- output


def format_table(reports: Sequence[VersionReport], *, budget: int) -> str:
    """A Markdown table, one column per version (percentages; ± is the population std)."""
    if not reports:
        return "(no versions)"
    header = ["metric"] + [f"{r.name or 'version'} `{r.short_id}`" for r in reports]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in metric_rows(reports, budget=budget)]
    return "\n".join(lines)


def format_genre_table(reports: Sequence[VersionReport], *, k: int, budget: int) -> str:
    """One row per report (version x mode x fusion), per genre: excerpt recall@k, context recall
    at ``budget`` and document hit@k (percentages)."""
    genres = sorted({g for r in reports for g in r.genres})
    header = ["version", "mode", "fusion"] + [f"{g} R@{k} / ctx / hit" for g in genres] + [f"all R@{k} / ctx"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for r in reports:
        cells = [f"`{r.short_id}`", r.mode, r.fusion or "default"]
        for g in genres:
            m = r.genres.get(g, {})
            cells.append(f"{percent(m.get(f'recall@{k}'))} / {percent(m.get('context'))} / {percent(m.get(f'hit@{k}'))}")
        cells.append(f"{percent(r.excerpt.get(k, {}).get(ALL, {}).get('recall'))} / {percent(r.context.get('recall'))}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def hybrid_margin(hybrid: VersionReport, vector: VersionReport, *, k: int, genres: Sequence[str]) -> tuple[float, float]:
    """(worst, mean) over ``genres`` of hybrid minus vector on excerpt recall@k and on context recall,
    in points: hybrid must not lose to vector on either metric of any genre, so the worst case leads."""
    deltas = []
    for g in genres:
        h, v = hybrid.genres.get(g, {}), vector.genres.get(g, {})
        for metric in (f"recall@{k}", "context"):
            if metric in h and metric in v:
                deltas.append(100 * (h[metric].mean - v[metric].mean))
    if not deltas:
        return 0.0, 0.0
    return min(deltas), sum(deltas) / len(deltas)


def leave_one_genre_out(
    hybrids: Sequence[VersionReport], vector: VersionReport, *, k: int
) -> list[tuple[str, VersionReport, tuple[float, float]]]:
    """For each genre: the hybrid report chosen on the *other* genres (largest worst-case margin over
    vector, then largest mean margin; the first listed wins ties) and its margin on the held-out genre."""
    genres = sorted({g for r in hybrids for g in r.genres})
    out = []
    for held in genres:
        rest = [g for g in genres if g != held]
        chosen = max(hybrids, key=lambda r: hybrid_margin(r, vector, k=k, genres=rest))
        out.append((held, chosen, hybrid_margin(chosen, vector, k=k, genres=[held])))
    return out


def format_histograms(reports: Sequence[VersionReport]) -> str:
    """Token-count histograms (bins of 32 tokens), one line per version."""
    return "\n".join(
        f"{r.short_id} tokens: " + ", ".join(f"{b}:{n}" for b, n in r.chunks.histogram.items()) for r in reports
    )


def to_json(reports: Sequence[VersionReport], *, settings: dict) -> dict:
    """Plain-JSON form of the reports (``--json``)."""

    def s(x: Summary | None):
        return None if x is None else {"mean": x.mean, "std": x.std, "n": x.n}

    return {
        "settings": settings,
        "versions": [
            {
                "id": r.version_id, "short_id": r.short_id, "name": r.name, "config": r.summary,
                "seconds": round(r.seconds, 2),
                "document": {str(k): {"hit": s(r.doc_hit[k]), "recall": s(r.doc_recall[k])} for k in r.doc_hit},
                "excerpt": {
                    str(k): {c: {m: s(v) for m, v in metrics.items()} for c, metrics in by.items()}
                    for k, by in r.excerpt.items()
                },
                "context": {m: s(v) for m, v in r.context.items()},
                "chunks": vars(r.chunks) if r.chunks else None,
                "mode": r.mode, "fusion": r.fusion,
                "genres": {g: {m: s(v) for m, v in metrics.items()} for g, metrics in r.genres.items()},
            }
            for r in reports
        ],
    }


def write_chart(reports: Sequence[VersionReport], path: str | Path) -> None:
    """A PNG: grouped bars of the retrieval metrics, and the token histograms, per version."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels, values = chart_bars(reports)
    fig, (bars, hist) = plt.subplots(1, 2, figsize=(15, 5.5), gridspec_kw={"width_ratios": [3, 2]})
    width = 0.8 / len(reports)
    for i, r in enumerate(reports):
        xs = [j + i * width for j in range(len(labels))]
        bars.bar(xs, values[i], width, label=f"{r.name or 'version'} ({r.short_id})")
    bars.set_xticks([j + width * (len(reports) - 1) / 2 for j in range(len(labels))], labels, rotation=30, ha="right")
    bars.set_ylabel("%")
    bars.set_ylim(0, 125)  # headroom for the legend above 100 %
    bars.set_title("retrieval through kb.search, per index version")
    bars.legend(fontsize=8, loc="upper center", ncol=2)
    for r in reports:
        bins = [int(b.split("-")[0]) for b in r.chunks.histogram]
        hist.step(bins, list(r.chunks.histogram.values()), where="post", label=r.name or r.short_id)
    hist.set_xlabel("tokens per chunk (embedded text, 32-token bins)")
    hist.set_ylabel("chunks")
    hist.set_title("chunk size distribution")
    hist.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# ----------------------------------------------------------------------------- a throwaway corpus tenant


def _wait(job_ids: Sequence, *, timeout: float, what: str) -> list[IngestionJob]:
    deadline = time.monotonic() + timeout
    ids = [str(j) for j in job_ids]
    while True:
        jobs = list(IngestionJob.objects.filter(id__in=ids))
        if all(j.status in (IngestionJob.Status.SUCCEEDED, IngestionJob.Status.FAILED) for j in jobs):
            return jobs
        if time.monotonic() > deadline:
            raise ApplicationError(f"{what} did not finish within {timeout:.0f}s")
        time.sleep(0.25)


@contextlib.contextmanager
def corpora_tenant(
    *, directory: str | Path, configs: Sequence[tuple[str, object]], keep: bool = False,
    out: Callable[[str], None] = print, timeout: float = 1800, by_type: bool = False,
) -> Iterator[tuple[Tenant, Membership, list[IndexVersion]]]:
    """A fresh tenant holding ``directory``'s files as plain-text documents (``by_type``: each as its name's type,
    as an upload of it would be: ``README.md`` as Markdown), with an admin, and one built index version per
    ``(name, ChunkingConfig)`` besides the active default; deleted afterwards unless ``keep``. Ingestion and builds
    run on a private worker (see ``bench.private_worker``)."""
    from accounts.models import User
    from accounts.services import membership_create, tenant_create
    from bench.private_worker import private_worker
    from ingestion.parsers import detect_content_type
    from kb.index_versions import index_version_active, index_version_build, index_version_create
    from kb.services import Upload, batch_create, document_delete

    root = Path(directory)
    # Sub-folders are genres: a file is named by its path under DIR (``structured/sessions.txt``).
    files = sorted(
        p for p in root.rglob("*")
        if p.is_file() and not any(part.startswith(".") for part in p.relative_to(root).parts)
    )
    if not files:
        raise ApplicationError(f"no corpus files in {directory}")
    slug = f"eval-{uuid.uuid4().hex[:8]}"
    tenant = tenant_create(slug=slug, name=f"kb_eval {Path(directory).name}")
    email = f"admin@{slug}.invalid"
    member = membership_create(tenant=tenant, email=email, role="admin", clearance="restricted")
    try:
        with private_worker("kb-eval"):
            started = time.perf_counter()
            uploads = [
                Upload(content=p.read_bytes(), title=p.relative_to(root).as_posix(),
                       source=p.relative_to(root).as_posix(),
                       content_type=(detect_content_type(p.name, p.read_bytes()) or "text/plain") if by_type
                       else "text/plain")
                for p in files
            ]
            batch = batch_create(tenant=tenant, created_by=None, uploads=uploads)
            failed = [j for j in _wait([batch.id], timeout=timeout, what="ingestion")
                      if j.status != IngestionJob.Status.SUCCEEDED]
            if failed:
                raise ApplicationError(f"ingestion of {directory} failed: {failed[0].error}")
            active = index_version_active(tenant=tenant)
            out(f"tenant {slug}: {len(files)} documents ingested into {active.short_id} "
                f"in {time.perf_counter() - started:.1f}s")
            built = [active]
            for name, config in configs:
                version, _ = index_version_create(tenant=tenant, config=config, name=name)
                if version.pk == active.pk:
                    continue
                started = time.perf_counter()
                job = index_version_build(version=version)
                _wait([job.id], timeout=timeout, what=f"build of {version.short_id}")
                version.refresh_from_db()
                if version.status != IndexVersion.Status.READY:
                    raise ApplicationError(f"build of {version.short_id} ended {version.status}")
                out(f"built {version.short_id} ({config_summary(version.config)}) "
                    f"in {time.perf_counter() - started:.1f}s")
                built.append(version)
        yield tenant, member, built
    finally:
        if keep:
            out(f"kept tenant {slug} (admin {email})")
        else:
            for document in Document.objects.filter(tenant=tenant):
                document_delete(document=document)
            tenant.delete()
            User.objects.filter(email=email, memberships__isnull=True).delete()


def golden_on_stored_text(questions, *, directory: str | Path, tenant) -> tuple[list, int]:
    """``questions`` (spans on the files of ``directory``) with their spans on each document's stored text, where a
    parser left hidden text out of it (``corpora_tenant(by_type=True)``); a span wholly in left-out text is dropped,
    and a question left with none (no reader could be shown its answer) is dropped and counted."""
    import bisect

    from bench.chunkeval.baselines import raw_offsets
    from ingestion.golden import GoldenQuestion

    stored = {d.source: d.text for d in Document.objects.filter(tenant=tenant).only("source", "text")}
    offsets: dict[str, list[int] | None] = {}
    out, dropped = [], 0
    for q in questions:
        if q.corpus_id not in offsets:
            raw = (Path(directory) / q.corpus_id).read_text(encoding="utf-8")
            text = stored.get(q.corpus_id)
            offsets[q.corpus_id] = None if text is None or text == raw else raw_offsets(raw, text)
        where = offsets[q.corpus_id]
        if where is None:
            out.append(q)
            continue
        spans = tuple((a, b) for a, b in ((bisect.bisect_left(where, s), bisect.bisect_left(where, e))
                                          for s, e in q.spans) if b > a)
        if spans:
            out.append(GoldenQuestion(q.question, q.corpus_id, spans))
        else:
            dropped += 1
    return out, dropped
