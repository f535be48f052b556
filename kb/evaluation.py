"""Retrieval evaluation of index versions through the real search service (BRIEF §6, ``kb_eval``).

Each golden question runs through :func:`kb.search.search` as one member, on each index
version, and is scored at every depth ``k``:

- **document level** (tenant-wide search): hit@k = 1 when the gold document is among the
  top-k results' documents; recall@k = the share of gold documents found (one gold
  document per question here, so it equals hit@k -- kept for golden sets with several).
- **excerpt level** (search restricted to the gold document, as the Chroma benchmark
  retrieves per corpus): token recall, precision and IoU of the top-k chunks' character
  ranges against the gold spans (:mod:`ingestion.evaluation.metrics`).
- **context** (the same restricted search at the first ``k``, with parent expansion under
  a token budget): context recall = the share of gold characters inside the returned
  contexts' spans, and what those contexts cost in tokens.

Plus each version's chunk size distribution (tokens of the embedded text, orphans under
50 characters). One query vector per question serves every version and depth.
"""

from __future__ import annotations

import contextlib
import os
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from accounts.errors import ApplicationError, NotFound
from accounts.models import Membership, Role, Tenant
from ingestion.evaluation.chunkeval import ChunkStats, chunk_stats
from ingestion.evaluation.golden import GoldenQuestion
from ingestion.evaluation.metrics import Summary, intersection_length, score_question, summarize, union_ranges
from kb.index_versions import config_summary
from kb.models import Chunk, Document, IndexVersion, IngestionJob

ALL = "all"


@dataclass(frozen=True)
class EvalQuestion:
    question: str
    corpus: str  # the golden set's name of the document
    document_id: uuid.UUID
    spans: tuple[tuple[int, int], ...] = ()


@dataclass
class VersionReport:
    version_id: str
    short_id: str
    name: str
    summary: str
    doc_hit: dict[int, Summary] = field(default_factory=dict)
    doc_recall: dict[int, Summary] = field(default_factory=dict)
    # k -> corpus (and ALL) -> metric (recall, precision, iou) -> summary
    excerpt: dict[int, dict[str, dict[str, Summary]]] = field(default_factory=dict)
    context: dict[str, Summary] = field(default_factory=dict)  # recall, tokens, contexts
    chunks: ChunkStats | None = None
    seconds: float = 0.0
    # genre (see genre_of) -> "hit@k" / "recall@k" (excerpt) / "context" -> summary
    genres: dict[str, dict[str, Summary]] = field(default_factory=dict)
    mode: str = ""
    fusion: str = ""  # the kb.search.KEYWORD overrides this report ran with ("" = the default)


def genre_of(corpus: str) -> str:
    """A document's genre: the folder of its golden name (``structured/sessions.txt`` -> ``structured``),
    else the name itself (one genre per corpus, e.g. chroma-general's ``wikitexts``)."""
    return corpus.split("/", 1)[0] if "/" in corpus else corpus


# ----------------------------------------------------------------------------- golden sets


def _names(document: Document) -> set[str]:
    names = {document.title, document.source}
    for value in (document.title, document.source):
        base = os.path.basename(value)
        names |= {base, os.path.splitext(base)[0]}
    return {n for n in names if n}


def golden_resolve(*, tenant: Tenant, questions: Sequence[GoldenQuestion]) -> list[EvalQuestion]:
    """Map each question's document name (JSONL ``document``, Chroma ``corpus_id``) to a document of
    ``tenant`` by source or title, or their file-name stem; spans must lie inside its text."""
    by_name: dict[str, list[Document]] = {}
    for document in Document.objects.filter(tenant=tenant).only("id", "title", "source", "text"):
        for name in _names(document):
            by_name.setdefault(name, []).append(document)
    resolved = []
    for q in questions:
        matches = {d.id: d for d in by_name.get(q.corpus_id, ())}
        if len(matches) != 1:
            problem = "matches no document" if not matches else f"matches {len(matches)} documents"
            raise ApplicationError(f"golden document {q.corpus_id!r} {problem} of tenant {tenant.slug!r}")
        document = next(iter(matches.values()))
        for start, end in q.spans:
            if not 0 <= start < end <= len(document.text):
                raise ApplicationError(
                    f"question {q.question[:60]!r}: span {start}:{end} outside {q.corpus_id!r} "
                    f"({len(document.text)} characters)"
                )
        resolved.append(EvalQuestion(q.question, q.corpus_id, document.id, tuple(q.spans)))
    return resolved


def eval_member(*, tenant: Tenant, email: str = "") -> Membership:
    """The member the evaluation searches as: ``email``'s membership, else the tenant's first admin."""
    members = Membership.objects.filter(tenant=tenant, is_active=True).select_related("tenant", "user")
    member = members.filter(user__email=email.strip().lower()).first() if email else (
        members.filter(role=Role.ADMIN).order_by("pk").first()
    )
    if member is None:
        raise NotFound(f"no active {'member ' + email if email else 'admin'} in tenant {tenant.slug!r}")
    return member


# ----------------------------------------------------------------------------- evaluation


def _chunk_stats(version: IndexVersion) -> ChunkStats:
    @dataclass
    class _Span:
        start: int
        end: int

    rows = list(Chunk.objects.filter(index_version=version).values_list("start", "end", "token_count"))
    return chunk_stats([_Span(s, e) for s, e, _ in rows], [t for _, _, t in rows])


def evaluate_versions(
    *,
    member: Membership,
    versions: Sequence[IndexVersion],
    questions: Sequence[EvalQuestion],
    ks: Sequence[int] = (5, 50),
    budget: int = 1000,
    mode: str = "hybrid",
    progress: Callable[[str], None] | None = None,
    vectors: Sequence | None = None,
) -> list[VersionReport]:
    """Score every question on every version at every ``k`` (see the module docstring).

    ``k`` above the search's ``MAX_TOP_K`` is refused: a page the service would cut short
    would understate recall silently.
    """
    from ingestion.services import embedder
    from kb.search import MAX_TOP_K, SearchFilters, search

    ks = sorted(set(ks))
    if not ks or ks[0] < 1 or ks[-1] > MAX_TOP_K:
        raise ApplicationError(f"every k must be from 1 to {MAX_TOP_K} (the search's largest page)")
    if mode == "keyword":
        vectors = [None] * len(questions)
    elif vectors is None:
        vectors = list(embedder().embed([q.question for q in questions]))
    context_k = ks[0]
    reports = []
    for version in versions:
        started = time.perf_counter()
        report = VersionReport(
            str(version.id), version.short_id, version.name or ("active" if version.is_active else ""),
            config_summary(version.config),
        )
        hits: dict[int, list[float]] = {k: [] for k in ks}
        recalls: dict[int, list[float]] = {k: [] for k in ks}
        excerpt: dict[int, dict[str, dict[str, list[float]]]] = {k: {} for k in ks}
        context: dict[str, list[float]] = {"recall": [], "tokens": [], "contexts": []}
        genres: dict[str, dict[str, list[float]]] = {}
        for i, (q, vector) in enumerate(zip(questions, vectors, strict=True)):
            common = {"member": member, "query": q.question, "mode": mode, "index_version": version,
                      "query_vector": vector}
            for k in ks:
                tenant_wide = search(**common, top_k=k, expand="none")
                found = {h.document_id for h in tenant_wide.results}
                gold = {q.document_id}  # the golden formats name one document per question
                hits[k].append(1.0 if gold & found else 0.0)
                genre = genres.setdefault(genre_of(q.corpus), {})
                genre.setdefault(f"hit@{k}", []).append(hits[k][-1])
                recalls[k].append(len(gold & found) / len(gold))
                if not q.spans:
                    continue
                expand = "parent" if k == context_k else "none"
                own = search(
                    **common, top_k=k, expand=expand, filters=SearchFilters(document_ids=(q.document_id,)),
                    max_contexts=min(k, MAX_TOP_K), context_token_budget=budget,
                )
                score = score_question(q.spans, [(h.start, h.end) for h in own.results])
                genre.setdefault(f"recall@{k}", []).append(score.recall)
                for bucket in (q.corpus, ALL):
                    b = excerpt[k].setdefault(bucket, {"recall": [], "precision": [], "iou": []})
                    b["recall"].append(score.recall)
                    b["precision"].append(score.precision)
                    b["iou"].append(score.iou)
                if expand == "parent":
                    covered = union_ranges(s for c in own.contexts for s in c.spans)
                    gold_chars = sum(e - s for s, e in q.spans)
                    context["recall"].append(intersection_length(union_ranges(q.spans), covered) / gold_chars)
                    genre.setdefault("context", []).append(context["recall"][-1])
                    context["tokens"].append(float(sum(c.token_count for c in own.contexts)))
                    context["contexts"].append(float(len(own.contexts)))
            if progress and (i + 1) % 25 == 0:
                progress(f"{report.short_id}: {i + 1}/{len(questions)} questions")
        report.doc_hit = {k: summarize(v) for k, v in hits.items()}
        report.doc_recall = {k: summarize(v) for k, v in recalls.items()}
        report.excerpt = {
            k: {bucket: {m: summarize(v) for m, v in metrics.items()} for bucket, metrics in by_bucket.items()}
            for k, by_bucket in excerpt.items() if by_bucket
        }
        report.context = {m: summarize(v) for m, v in context.items()} if context["recall"] else {}
        report.genres = {g: {m: summarize(v) for m, v in metrics.items()} for g, metrics in sorted(genres.items())}
        report.mode = mode
        report.chunks = _chunk_stats(version)
        report.seconds = time.perf_counter() - started
        reports.append(report)
    return reports


# ----------------------------------------------------------------------------- output


def _pct(s: Summary | None, digits: int = 1, std: bool = False) -> str:
    if s is None or s.n == 0:
        return "-"
    text = f"{100 * s.mean:.{digits}f}"
    return f"{text} ± {100 * s.std:.{digits}f}" if std else text


def format_table(reports: Sequence[VersionReport], *, budget: int) -> str:
    """A Markdown table, one column per version (percentages; ± is the population std)."""
    if not reports:
        return "(no versions)"
    ks = sorted(reports[0].doc_hit)
    header = ["metric"] + [f"{r.name or 'version'} `{r.short_id}`" for r in reports]
    rows: list[list[str]] = [["config"] + [r.summary for r in reports]]
    for k in ks:
        rows.append([f"document hit@{k}"] + [_pct(r.doc_hit[k]) for r in reports])
        rows.append([f"document recall@{k}"] + [_pct(r.doc_recall[k]) for r in reports])
    corpora = sorted({c for r in reports for by in r.excerpt.values() for c in by if c != ALL})
    for k in ks:
        if not any(k in r.excerpt for r in reports):
            continue
        for metric, digits in (("recall", 1), ("precision", 2), ("iou", 2)):
            label = "IoU" if metric == "iou" else metric
            rows.append([f"excerpt {label}@{k}"]
                        + [_pct(r.excerpt.get(k, {}).get(ALL, {}).get(metric), digits, std=True) for r in reports])
        if len(corpora) > 1:
            for corpus in corpora:
                rows.append([f"  {corpus} recall / IoU @{k}"] + [
                    f"{_pct(r.excerpt.get(k, {}).get(corpus, {}).get('recall'))} / "
                    f"{_pct(r.excerpt.get(k, {}).get(corpus, {}).get('iou'), 2)}" for r in reports
                ])
    if any(r.context for r in reports):
        rows.append([f"context recall@{ks[0]} (budget {budget})"]
                    + [_pct(r.context.get("recall"), 1, std=True) for r in reports])
        rows.append(["context tokens (mean)"]
                    + [f"{r.context['tokens'].mean:.0f}" if r.context else "-" for r in reports])
        rows.append(["contexts (mean)"]
                    + [f"{r.context['contexts'].mean:.1f}" if r.context else "-" for r in reports])
    rows.append(["chunks"] + [str(r.chunks.count) for r in reports])
    rows.append(["tokens mean / max"] + [f"{r.chunks.mean_tokens:.0f} / {r.chunks.max_tokens}" for r in reports])
    rows.append(["orphans (< 50 chars)"] + [str(r.chunks.orphans) for r in reports])
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
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
            cells.append(f"{_pct(m.get(f'recall@{k}'))} / {_pct(m.get('context'))} / {_pct(m.get(f'hit@{k}'))}")
        cells.append(f"{_pct(r.excerpt.get(k, {}).get(ALL, {}).get('recall'))} / {_pct(r.context.get('recall'))}")
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

    ks = sorted(reports[0].doc_hit)
    labels, values = [], [[] for _ in reports]
    for k in ks:
        labels.append(f"doc hit@{k}")
        for i, r in enumerate(reports):
            values[i].append(100 * r.doc_hit[k].mean)
        for metric in ("recall", "iou"):
            if all(k in r.excerpt for r in reports):
                labels.append(f"excerpt {'IoU' if metric == 'iou' else metric}@{k}")
                for i, r in enumerate(reports):
                    values[i].append(100 * r.excerpt[k][ALL][metric].mean)
    if all(r.context for r in reports):
        labels.append(f"context recall@{ks[0]}")
        for i, r in enumerate(reports):
            values[i].append(100 * r.context["recall"].mean)
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
    out: Callable[[str], None] = print, timeout: float = 1800,
) -> Iterator[tuple[Tenant, Membership, list[IndexVersion]]]:
    """A fresh tenant holding ``directory``'s files as plain-text documents, with an admin, and one
    built index version per ``(name, ChunkingConfig)`` besides the active default; deleted afterwards
    unless ``keep``. Ingestion and builds run on a private worker (see ``ingestion.private_worker``)."""
    from accounts.models import User
    from accounts.services import membership_create, tenant_create
    from ingestion.private_worker import private_worker
    from kb.index_versions import index_version_build, index_version_create
    from kb.services import Upload, batch_create, document_delete, index_version_active

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
                       source=p.relative_to(root).as_posix(), content_type="text/plain")
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
