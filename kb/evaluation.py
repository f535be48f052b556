"""Retrieval evaluation of index versions through the real search service.

Each golden question runs through :func:`kb.search.search` as one member, on each index
version, and is scored at every depth ``k``:

- **document level** (tenant-wide search): hit@k = 1 when the gold document is among the
  top-k results' documents; recall@k = the share of gold documents found (one gold
  document per question here, so it equals hit@k -- kept for golden sets with several).
- **excerpt level** (search restricted to the gold document, as the Chroma benchmark
  retrieves per corpus): token recall, precision and IoU of the top-k chunks' character
  ranges against the gold spans (:mod:`ingestion.quality`).
- **context** (the same restricted search at the first ``k``, with parent expansion under
  a token budget): context recall = the share of gold characters inside the returned
  contexts' spans, and what those contexts cost in tokens.

Plus each version's chunk size distribution (tokens of the embedded text, orphans under
50 characters). One query vector per question serves every version and depth.

The product side of evaluation: the console evaluates a version against an uploaded golden
file here (:func:`version_evaluate`), and ``kb_eval`` (``bench``) runs the same functions
from the command line and adds its Markdown tables, JSON and PNG chart.

An evaluation in the console is a search path like any other, so it is **audited** and
**bounded** (found by the third attack on the demo: 200 questions at 15 depths ran ~6,000 searches
in one web thread for 36 s and left no record -- "is document D in the top k for query Q", at scale,
unrecorded). :func:`version_evaluate` refuses a run of more than :data:`UPLOAD_MAX_SEARCHES`
searches (questions x depths x versions, twice for a question with spans) before it searches,
stops at ``BULKHEAD_EVALUATION_SECONDS``, runs one at a time per tenant (``kb.web_slots``: 429 ``busy``),
and records one ``index_version.evaluate`` audit record
per evaluation: the acting member, the golden file's size and question count, the versions, the
depths, the mode, the searches it runs and the golden documents (so "who retrieved document D"
finds evaluations too). The individual searches are not recorded one by one (``audit: False``).
"""

from __future__ import annotations

import os
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from accounts.access import readable_q
from accounts.errors import ApplicationError, NotFound
from accounts.models import Membership, Role, Tenant
from accounts.policy import Reader
from accounts.selectors import reader_for
from ingestion.golden import GoldenQuestion, load_questions
from ingestion.quality import (
    ChunkStats,
    Summary,
    chunk_stats,
    intersection_length,
    score_question,
    summarize,
    union_ranges,
)
from kb.index_versions import config_summary
from kb.models import Chunk, Document, IndexVersion
from kb.selectors import document_visible_q
from kb.titles import reader_annotations, screening_mode, shown_source_of, shown_title_of
from kb.web_slots import tenant_slot

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
    fusion: str = ""  # the kb.retrieval.KEYWORD overrides this report ran with ("" = the default)


def genre_of(corpus: str) -> str:
    """A document's genre: the folder of its golden name (``structured/sessions.txt`` -> ``structured``),
    else the name itself (one genre per corpus, e.g. chroma-general's ``wikitexts``)."""
    return corpus.split("/", 1)[0] if "/" in corpus else corpus


# ----------------------------------------------------------------------------- golden sets


def _names(document: Document, mode: str | None = None) -> set[str]:
    """The names a golden set may give ``document`` by; with ``mode``, of its title and source as shown under it
    (``kb.titles``: a held one is its placeholder, never named by its stored words)."""
    title, source = document.title, document.source
    if mode is not None:
        title, source = shown_title_of(document, mode), shown_source_of(document, mode)
    names = {title, source, *([document.content_title] if mode is None and document.content_title else [])}
    for value in (title, source):
        base = os.path.basename(value)
        names |= {base, os.path.splitext(base)[0]}
    return {n for n in names if n}


def golden_resolve(
    *, tenant: Tenant, questions: Sequence[GoldenQuestion], reader: Reader | None = None
) -> list[EvalQuestion]:
    """Map each question's document name (JSONL ``document``, Chroma ``corpus_id``) to a document of
    ``tenant`` by source or title, or their file-name stem; spans must lie inside its text.

    With a ``reader`` (a member evaluating through the console) only documents that reader may
    know of are named (``kb.selectors.document_visible_q``): a title is document content, and an
    admin is not above the access rule -- and only by their titles and sources as shown (a held one is
    ``(title held for review)``: resolving, or not, would confirm its stored words). Without one (the command
    line, run by whoever holds the database) any document, by its stored names.
    """
    documents = Document.objects.filter(tenant=tenant)
    mode = None
    if reader is not None:  # the titles as the reader is shown them (kb.titles.reader_title)
        documents = documents.filter(document_visible_q(reader)).annotate(**reader_annotations(reader))
        mode = screening_mode(tenant_id=tenant.pk)
    by_name: dict[str, list[Document]] = {}
    for document in documents.only("id", "tenant_id", "title", "content_title", "title_section", "source", "text",
                                   "metadata"):
        for name in _names(document, mode):
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


def _chunk_stats(version: IndexVersion, reader: Reader) -> ChunkStats:
    """The version's chunk figures over the chunks ``reader`` may read (found attacking evaluation reports: over
    every chunk, an internal admin's report showed a restricted chunk's token count as the maximum)."""
    @dataclass
    class _Span:
        start: int
        end: int

    rows = list(Chunk.objects.filter(readable_q(reader), index_version=version)
                .values_list("start", "end", "token_count"))
    return chunk_stats([_Span(s, e) for s, e, _ in rows], [t for _, _, t in rows])


def searches_needed(questions: Sequence[EvalQuestion], *, versions: int, ks: Sequence[int]) -> int:
    """How many searches :func:`evaluate_versions` runs: per version, question and depth, one
    tenant-wide search and, for a question with gold spans, one in its document."""
    per_version = sum(2 if q.spans else 1 for q in questions) * len(set(ks))
    return per_version * versions


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
    deadline: float | None = None,
    budget_fill: bool | None = None,
) -> list[VersionReport]:
    """Score every question on every version at every ``k`` (see the module docstring).

    ``k`` above the search's ``MAX_TOP_K`` is refused: a page the service would cut short
    would understate recall silently. With ``deadline`` (``time.monotonic()``) an evaluation still
    running then stops with an ApplicationError naming how far it got. ``budget_fill``: the contexts' search
    with it (``kb.search.search``; None, the search's default).
    """
    from kb.embedder import embedder
    from kb.retrieval import RETRIEVAL_MODES
    from kb.search import SearchFilters, search
    from kb.search_modes import MAX_TOP_K

    ks = sorted(set(ks))
    if not ks or ks[0] < 1 or ks[-1] > MAX_TOP_K:
        raise ApplicationError(f"every k must be from 1 to {MAX_TOP_K} (the search's largest page)")
    if mode in RETRIEVAL_MODES and not RETRIEVAL_MODES[mode].embeds:  # an unknown mode: search refuses it
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
            if deadline is not None and time.monotonic() > deadline:
                raise ApplicationError(
                    f"the evaluation ran out of its time after {i} of {len(questions)} questions on version "
                    f"{report.short_id}: evaluate fewer questions, depths or versions at once (or run kb_eval)",
                    code="evaluation_too_long",
                )
            # Golden questions measure a version; each search is not recorded on its own: the
            # evaluation as a whole is (version_evaluate).
            common = {"member": member, "query": q.question, "mode": mode, "index_version": version,
                      "query_vector": vector, "audit": False}
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
                    budget_fill=budget_fill if expand == "parent" else None,
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
        report.chunks = _chunk_stats(version, reader_for(member))
        report.seconds = time.perf_counter() - started
        reports.append(report)
    return reports



# ----------------------------------------------------------------------------- figures


def percent(s: Summary | None, digits: int = 1, std: bool = False) -> str:
    """A mean as a percentage (``-`` when nothing was measured); ``± std`` on request."""
    if s is None or s.n == 0:
        return "-"
    text = f"{100 * s.mean:.{digits}f}"
    return f"{text} ± {100 * s.std:.{digits}f}" if std else text


def metric_rows(reports: Sequence[VersionReport], *, budget: int) -> list[list[str]]:
    """The comparison table's rows, ``[label, value per report...]`` (percentages; ± is the
    population std): the command line prints them as Markdown, the console as HTML."""
    if not reports:
        return []
    ks = sorted(reports[0].doc_hit)
    rows: list[list[str]] = [["config"] + [r.summary for r in reports]]
    for k in ks:
        rows.append([f"document hit@{k}"] + [percent(r.doc_hit[k]) for r in reports])
        rows.append([f"document recall@{k}"] + [percent(r.doc_recall[k]) for r in reports])
    corpora = sorted({c for r in reports for by in r.excerpt.values() for c in by if c != ALL})
    for k in ks:
        if not any(k in r.excerpt for r in reports):
            continue
        for metric, digits in (("recall", 1), ("precision", 2), ("iou", 2)):
            label = "IoU" if metric == "iou" else metric
            rows.append([f"excerpt {label}@{k}"]
                        + [percent(r.excerpt.get(k, {}).get(ALL, {}).get(metric), digits, std=True) for r in reports])
        if len(corpora) > 1:
            for corpus in corpora:
                rows.append([f"  {corpus} recall / IoU @{k}"] + [
                    f"{percent(r.excerpt.get(k, {}).get(corpus, {}).get('recall'))} / "
                    f"{percent(r.excerpt.get(k, {}).get(corpus, {}).get('iou'), 2)}" for r in reports
                ])
    if any(r.context for r in reports):
        rows.append([f"context recall@{ks[0]} (budget {budget})"]
                    + [percent(r.context.get("recall"), 1, std=True) for r in reports])
        rows.append(["context tokens (mean)"]
                    + [f"{r.context['tokens'].mean:.0f}" if r.context else "-" for r in reports])
        rows.append(["contexts (mean)"]
                    + [f"{r.context['contexts'].mean:.1f}" if r.context else "-" for r in reports])
    rows.append(["chunks"] + [str(r.chunks.count) for r in reports])
    rows.append(["tokens mean / max"] + [f"{r.chunks.mean_tokens:.0f} / {r.chunks.max_tokens}" for r in reports])
    rows.append(["orphans (< 50 chars)"] + [str(r.chunks.orphans) for r in reports])
    return rows


def chart_bars(reports: Sequence[VersionReport]) -> tuple[list[str], list[list[float]]]:
    """The retrieval metrics a chart compares: labels, and per report one percentage per label
    (document hit@k; excerpt recall and IoU@k where every report has them; context recall)."""
    if not reports:
        return [], []
    ks = sorted(reports[0].doc_hit)
    labels: list[str] = []
    values: list[list[float]] = [[] for _ in reports]
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
    return labels, values


# ----------------------------------------------------------------------------- an uploaded golden file

UPLOAD_MAX_BYTES = 1024 * 1024
# The console evaluates while the admin waits: every question is a few searches per version and k.
UPLOAD_MAX_QUESTIONS = 200
# ... and at most this many searches in all (questions x depths x versions, twice with spans): about
# 12 s of a web thread at the ~6 ms a search the attack measured on the demo.
UPLOAD_MAX_SEARCHES = 2000


def golden_parse(*, content: bytes, filename: str) -> list[GoldenQuestion]:
    """The questions of an uploaded golden file, read as ``kb_eval --golden`` reads a file
    (:func:`ingestion.golden.load_questions`: ``.jsonl`` or Chroma ``.csv``, by extension).

    Refuses (ApplicationError) a file that is too large, malformed, empty or too long to evaluate
    while one waits.
    """
    if len(content) > UPLOAD_MAX_BYTES:
        raise ApplicationError(
            f"the golden file is {len(content)} bytes; the limit is {UPLOAD_MAX_BYTES}", code="invalid_golden"
        )
    suffix = Path(filename or "").suffix.lower() or ".jsonl"
    name = Path(filename or "golden.jsonl").name
    with tempfile.TemporaryDirectory(prefix="golden-") as folder:
        path = Path(folder) / f"upload{suffix}"
        path.write_bytes(content)
        try:
            questions = load_questions(path)
        except (ValueError, KeyError, UnicodeDecodeError) as exc:
            raise ApplicationError(str(exc).replace(str(path), name), code="invalid_golden") from None
        except (TypeError, AttributeError, OverflowError, RecursionError, IndexError):
            # Hostile shapes (a JSON list where an object belongs, 1e400 as an offset, deep nesting).
            raise ApplicationError(f"{name} is not a golden file of the expected shape", code="invalid_golden") from None
    if not questions:
        raise ApplicationError(f"{name} holds no questions", code="invalid_golden")
    if len(questions) > UPLOAD_MAX_QUESTIONS:
        raise ApplicationError(
            f"{name} holds {len(questions)} questions; the console evaluates at most {UPLOAD_MAX_QUESTIONS} "
            "(run kb_eval for more)", code="invalid_golden",
        )
    return questions


def version_evaluate(
    *,
    member: Membership,
    versions: Sequence[IndexVersion],
    content: bytes,
    filename: str,
    ks: Sequence[int] = (1, 5),
    budget: int = 1000,
    mode: str = "hybrid",
) -> list[VersionReport]:
    """Evaluate ``versions`` of the member's tenant on an uploaded golden file, searching as ``member``.

    Golden documents resolve among the documents the member may read; every search goes through
    :func:`kb.search.search` as the member, so an evaluation never sees more than a search would.
    Refused before any search over :data:`UPLOAD_MAX_SEARCHES`; stopped at ``BULKHEAD_EVALUATION_SECONDS``;
    recorded in the audit trail once, before its searches run (module docstring).
    """
    from django.conf import settings

    from audit.models import Action
    from audit.services import audit_record

    if any(v.tenant_id != member.tenant_id for v in versions):
        raise NotFound("Not found.")
    started = time.monotonic()
    questions = golden_parse(content=content, filename=filename)
    resolved = golden_resolve(tenant=member.tenant, questions=questions, reader=reader_for(member))
    depths = sorted(set(ks))
    searches = searches_needed(resolved, versions=len(versions), ks=depths)
    if searches > UPLOAD_MAX_SEARCHES:
        raise ApplicationError(
            f"this evaluation would run {searches:,} searches ({len(resolved)} questions x {len(depths)} depths x "
            f"{len(versions)} version{'s' if len(versions) != 1 else ''}, twice for a question with spans); the "
            f"console runs at most {UPLOAD_MAX_SEARCHES:,} at once: fewer questions, depths or versions (or run "
            "kb_eval)", code="evaluation_too_long",
        )
    with tenant_slot("evaluation", member.tenant_id, limit=settings.BULKHEAD_EVALUATIONS_PER_TENANT,
                     seconds=settings.BULKHEAD_EVALUATION_SECONDS + 60, what="evaluation"):
        audit_record(
            action=Action.INDEX_VERSION_EVALUATE, actor=member, target_type="index_version",
            target_id=versions[0].pk if versions else "",
            document_ids=sorted({q.document_id for q in resolved}, key=str),
            details={"golden_bytes": len(content), "questions": len(resolved),
                     "versions": [str(v.pk) for v in versions], "depths": depths, "mode": mode,
                     "context_budget": budget, "searches": searches},
        )
        return evaluate_versions(member=member, versions=versions, questions=resolved, ks=depths, budget=budget,
                                 mode=mode, deadline=started + settings.BULKHEAD_EVALUATION_SECONDS)
