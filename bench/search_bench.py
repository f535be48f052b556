"""The search benchmark: latency and recall of filtered vector search at several selectivities.

``manage.py kb_bench search`` loads N chunks of real text with real MiniLM embeddings
(:mod:`bench.search_bench_corpus`) into a *separate* database (refuses one whose name
lacks "bench"), spread over T tenants, each with four members who may read 100%, 50%,
10% and 1% of their tenant's chunks (levels and a group, assigned per section at random,
so what a member reads is scattered over the embedding space). Then, for every query
and member, side by side in the same run:

(a) exact: the filtered query with index scans off (bitmap scan of the access index + sort);
(b) plain HNSW + WHERE: ``hnsw.iterative_scan = off``, default ``ef_search`` (40) -- the
    common approach, on the shared index alone (measured before any per-tenant index exists);
then the per-tenant partial HNSW indexes are built (``kb.tenant_indexes``) and
(c) ``kb.search.search`` in vector mode, no expansion (our planner);
(d) ``search`` hybrid, no expansion; (e) hybrid with parent expansion; (f) vector with parent
    expansion.

Recall@10 is measured against (a). Query embeddings are precomputed (the model's time
is reported once, separately), so latencies are the database and Python around it.
"""

from __future__ import annotations

import statistics
import time
import uuid
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np
from django.db import connection, models

from accounts.models import Group, GroupMembership, Membership, Tenant, User
from accounts.policy import AccessLevel
from bench.search_bench_corpus import CORPUS_SIZE, build, corpus_queries, query_vectors
from kb.models import Chunk, Document, IndexVersion, Section
from kb.retrieval import readable_chunks, vector_exact, vector_hnsw
from kb.search import SearchFilters, search

CHUNKS_PER_SECTION = 5
SECTIONS_PER_DOCUMENT = 10
# Per-section policy shares: (level, in group "blue", share).
POLICIES = [
    (AccessLevel.PUBLIC, False, 0.01),
    (AccessLevel.INTERNAL, False, 0.09),
    (AccessLevel.CONFIDENTIAL, False, 0.30),
    (AccessLevel.CONFIDENTIAL, True, 0.10),
    (AccessLevel.RESTRICTED, False, 0.50),
]
# Members: name, clearance, groups, share of the tenant's chunks they may read.
READERS = [("reads-100", AccessLevel.RESTRICTED, ("blue",), 1.0),
           ("reads-50", AccessLevel.CONFIDENTIAL, ("blue",), 0.50), ("reads-10", AccessLevel.INTERNAL, (), 0.10),
           ("reads-1", AccessLevel.PUBLIC, (), 0.01)]
SLUG_PREFIX = "bench-"


def _check_database() -> str:
    name = connection.settings_dict["NAME"]
    if "bench" not in name:
        raise RuntimeError(
            f"refusing to load benchmark rows into database {name!r}: point DATABASE_URL at a database "
            "whose name contains 'bench' (e.g. .../bulkhead_bench)"
        )
    return name


def perturbed(
    vectors: np.ndarray, total: int, *, seed: int = 3, noise: float = 0.35
) -> tuple[np.ndarray, np.ndarray]:
    """``total`` unit vectors and the index of the real text each stands for: the real ones,
    then noisy copies of random real ones (synthesised rows; cosine to the original ~0.94)."""
    if total <= len(vectors):
        return vectors[:total], np.arange(total)
    rng = np.random.default_rng(seed)
    source = rng.integers(0, len(vectors), total - len(vectors))
    extra = vectors[source] + rng.normal(scale=noise / np.sqrt(vectors.shape[1]), size=(len(source), vectors.shape[1]))
    extra /= np.linalg.norm(extra, axis=1, keepdims=True)
    return np.concatenate([vectors, extra.astype(np.float32)]), np.concatenate([np.arange(len(vectors)), source])


def load(*, texts: list[str], vectors: np.ndarray, chunks: int, tenants: int, log=print) -> dict:
    """Replace the benchmark tenants with ``chunks`` rows; returns build statistics."""
    _check_database()
    started = time.monotonic()
    n_real = min(len(texts), chunks)
    vectors, source = perturbed(vectors[:n_real], chunks)
    Tenant.objects.filter(slug__startswith=SLUG_PREFIX).delete()
    rng = np.random.default_rng(1)
    order = rng.permutation(chunks)  # each tenant gets a mix of every source
    with connection.cursor() as cursor:
        cursor.execute("DROP INDEX IF EXISTS chunk_embedding_hnsw")
    per_tenant = chunks // tenants
    for t in range(tenants):
        tenant, version, blue = create_tenant(t)
        ids = order[t * per_tenant : (t + 1) * per_tenant]
        load_tenant(tenant, version, blue.id, ids, texts, vectors, source, rng)
        log(f"tenant {t}: {len(ids)} chunks loaded ({time.monotonic() - started:.0f}s)")
    loaded = time.monotonic() - started
    with connection.cursor() as cursor:
        # The HNSW graph must fit in maintenance_work_mem or the build crawls (~2.5 kB per row here).
        cursor.execute(f"SET maintenance_work_mem = '{min(8192, max(1024, chunks * 3 // 1000))}MB'")
        cursor.execute("SET max_parallel_maintenance_workers = 2")
        index_started = time.monotonic()
        hnsw = next(i for i in Chunk._meta.indexes if i.name == "chunk_embedding_hnsw")  # the model's parameters
        cursor.execute(
            "CREATE INDEX chunk_embedding_hnsw ON kb_chunk USING hnsw (embedding vector_cosine_ops) "
            f"WITH (m = {int(hnsw.m)}, ef_construction = {int(hnsw.ef_construction)})"
        )
        index_seconds = time.monotonic() - index_started
        cursor.execute("VACUUM ANALYZE kb_chunk")
        cursor.execute("SELECT pg_size_pretty(pg_total_relation_size('kb_chunk')), "
                       "pg_size_pretty(pg_relation_size('chunk_embedding_hnsw'))")
        table_size, index_size = cursor.fetchone()
    return {"chunks": chunks, "real_vectors": n_real, "tenants": tenants, "load_s": loaded,
            "hnsw_build_s": index_seconds, "table_size": table_size, "hnsw_size": index_size}


def create_tenant(t: int) -> tuple[Tenant, IndexVersion, Group]:
    """Benchmark tenant ``t``: its active index version, group "blue" and one member per reader."""
    tenant = Tenant.objects.create(slug=f"{SLUG_PREFIX}{t}", name=f"Benchmark {t}")
    blue = Group.objects.create(tenant=tenant, slug="blue", name="blue")
    version = IndexVersion.objects.create(
        id=uuid.uuid4(), tenant=tenant, config={"benchmark": True}, config_hash=f"bench-{t}", status="ready",
        is_active=True,
    )
    for name, clearance, groups, _ in READERS:
        user = User.objects.filter(email=f"{name}-{t}@bench.io").first() or User.objects.create_user(
            f"{name}-{t}@bench.io")
        member = Membership.objects.create(user=user, tenant=tenant, clearance=clearance)
        if groups:
            GroupMembership.objects.create(membership=member, group=blue)
    return tenant, version, blue


def build_tenant_indexes(*, min_rows: int, log=print) -> dict:
    """Per-tenant partial HNSW indexes through the product's own sync (kb.tenant_indexes)."""
    from kb import tenant_indexes

    _check_database()
    drop_tenant_indexes()  # a re-run measures a fresh build
    started = time.monotonic()
    report = tenant_indexes.tenant_indexes_sync(min_rows=min_rows, log=log)
    seconds = time.monotonic() - started
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE kb_chunk")
    built = [i for i in tenant_indexes.tenant_indexes() if i.valid]
    return {"tenant_indexes": len(built), "tenant_index_build_s": seconds,
            "tenant_index_mb": sum(i.size_bytes for i in built) / 2**20,
            "tenant_index_rows": sorted({i.rows for i in built}), "per_index_s": [round(b[2], 1) for b in report.built]}


def drop_tenant_indexes() -> None:
    from kb import tenant_indexes

    for index in tenant_indexes.tenant_indexes():
        tenant_indexes.tenant_index_drop(tenant_id=index.tenant_id)


def load_tenant(tenant, version, blue_id, ids, texts, vectors, source, rng) -> None:
    """Documents of 10 sections of 5 chunks, one COPY per table (:func:`copy_rows`)."""
    n_sections = -(-len(ids) // CHUNKS_PER_SECTION)
    shares = np.array([p[2] for p in POLICIES])
    counts = np.floor(shares * n_sections).astype(int)
    counts[-1] = n_sections - counts[:-1].sum()
    policy_of_section = rng.permutation(np.repeat(np.arange(len(POLICIES)), counts))
    documents: list[Document] = []
    sections: list[Section] = []
    chunks: list[Chunk] = []
    common = {"tenant_id": tenant.id}
    for d0 in range(0, n_sections, SECTIONS_PER_DOCUMENT):
        document = Document(**common, title=f"Benchmark document {d0 // SECTIONS_PER_DOCUMENT}",
                            content_type="text/markdown", raw=b"", sha256="0" * 64, status=Document.Status.READY)
        root = Section(id=uuid.uuid4(), **common, document_id=document.id, key="0", order=0, depth=0,
                       title="Benchmark document", kind="heading", start=0, access_level=AccessLevel.INTERNAL)
        sections.append(root)
        parts: list[str] = []
        pos = 0
        ordinal = 0
        for s in range(d0, min(d0 + SECTIONS_PER_DOCUMENT, n_sections)):
            level, grouped, _ = POLICIES[policy_of_section[s]]
            policy = {"access_level": int(level), "access_groups": [blue_id] if grouped else []}
            order = s - d0 + 1
            title = f"Part {order}"
            section = Section(id=uuid.uuid4(), **common, document_id=document.id, parent_id=root.id, key=str(order),
                              order=order, depth=1, title=title, heading_path=[root.title, title], kind="heading",
                              start=pos, own_level=policy["access_level"], own_groups=policy["access_groups"],
                              **policy)
            parts.append(f"## {title}\n\n")
            pos += len(parts[-1])
            for i in ids[s * CHUNKS_PER_SECTION : (s + 1) * CHUNKS_PER_SECTION]:
                text = texts[source[i]].replace("\x00", "")
                chunks.append(Chunk(
                    id=uuid.uuid4(), **common, document_id=document.id, section_id=section.id,
                    index_version_id=version.id, ordinal=ordinal, start=pos, end=pos + len(text), text=text,
                    embed_text=text, token_count=max(1, len(text) // 4), content_hash=f"{int(i):064x}"[-64:],
                    embedding=vectors[i], **policy,
                ))
                section.body_spans.append([pos, pos + len(text)])
                parts.append(text + "\n\n")
                pos += len(text) + 2
                ordinal += 1
            section.end = pos
            sections.append(section)
        document.text = "".join(parts)
        document.size_bytes = root.end = len(document.text)
        documents.append(document)
    copy_rows(Document, documents)
    copy_rows(Section, sections)
    copy_rows(Chunk, chunks)


def copy_fields(model: type[models.Model]) -> list[models.Field]:
    """The fields a COPY into ``model``'s table writes: every concrete one the database does not compute."""
    return [f for f in model._meta.concrete_fields if not f.generated]


def copy_rows(model: type[models.Model], objects: Iterable[models.Model]) -> int:
    """COPY unsaved ``objects`` into ``model``'s table; returns the number of rows.

    Columns and values come from the model, each value as ``save()`` would write it (defaults
    from the field definitions, ``auto_now`` from ``pre_save``), so a new column needs no edit
    here. COPY rather than ``bulk_create``: the benchmark loads 100,000 chunks and more.
    """
    fields = copy_fields(model)
    quote = connection.ops.quote_name
    statement = f"COPY {quote(model._meta.db_table)} ({', '.join(quote(f.column) for f in fields)}) FROM STDIN"
    rows = 0
    with connection.cursor() as cursor, cursor.cursor.copy(statement) as copy:
        for obj in objects:
            copy.write_row([f.get_db_prep_save(f.pre_save(obj, True), connection) for f in fields])
            rows += 1
    return rows


# ----------------------------------------------------------------------------- measuring


@dataclass
class Series:
    latencies: list[float] = field(default_factory=list)
    recalls: list[float] = field(default_factory=list)
    short_pages: int = 0
    plans: dict[str, int] = field(default_factory=dict)

    def row(self) -> tuple[float, float, float | None, int]:
        lat = sorted(self.latencies)
        p95 = lat[min(len(lat) - 1, int(round(0.95 * (len(lat) - 1))))]
        recall = statistics.mean(self.recalls) if self.recalls else None
        return statistics.median(lat), p95, recall, self.short_pages


def _members() -> tuple[list[Tenant], dict]:
    tenants = list(Tenant.objects.filter(slug__startswith=SLUG_PREFIX).order_by("id"))
    members = {
        (t.id, name): Membership.objects.select_related("user", "tenant").get(
            tenant=t, user__email=f"{name}-{t.slug.removeprefix(SLUG_PREFIX)}@bench.io"
        )
        for t in tenants
        for name, *_ in READERS
    }
    return tenants, members


def _timed(fn, *args, **kwargs):
    t0 = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, (time.perf_counter() - t0) * 1000


# The access rule as a chunk policy, for measuring only (item 2 of the wall's design, docs/benchmarks.md):
# restrictive, so it narrows the tenant policy; the reader's clearance and groups come per request.
ACCESS_POLICY = """
CREATE POLICY bench_access ON kb_chunk AS RESTRICTIVE FOR SELECT USING (
    access_level <= NULLIF(current_setting('app.clearance', true), '')::smallint
    AND (cardinality(access_groups) = 0
         OR access_groups && NULLIF(current_setting('app.groups', true), '')::bigint[]))
"""


def access_policy(create: bool) -> None:
    with connection.cursor() as cursor:
        cursor.execute("DROP POLICY IF EXISTS bench_access ON kb_chunk")
        if create:
            cursor.execute(ACCESS_POLICY)


def _as_a_request(tenant_id: int, *, access=None, **kwargs):
    """``search`` with what an API request adds around it under the tenant wall, and the time the
    member waits for it (ms): the clear at the start (skipped when the previous request's clear at
    its end is known to have held, ``TenantContextMiddleware``), the tenant set when the token is
    looked up (one round trip, ``tenancy.tenant_activate_for_token``; with ``access``, also the
    reader's clearance and groups, in the same statement), the search. The clear at the end runs
    on ``request_finished``, once the response has been sent: after the timed part, like the audit
    record."""
    from accounts.tenancy import tenant_activate, tenant_context_reset_if_connected, tenant_context_reset_if_set

    t0 = time.perf_counter()
    tenant_context_reset_if_set()
    reader = None
    if access is not None:
        reader = {"app.clearance": str(int(access.clearance)),
                  "app.groups": "{" + ",".join(str(g) for g in sorted(access.group_ids)) + "}"}
    tenant_activate(tenant_id, also=reader)
    try:
        answer = search(**kwargs)
        return answer, (time.perf_counter() - t0) * 1000
    finally:
        tenant_context_reset_if_connected()


def _wall_pairs(tenant_id: int, common: dict, qi: int, *, access=None, audit: bool = True) -> list:
    """Each search mode twice, side by side: as the owner without the audit record (no row-level
    security, no audit: the search as it was before both) and as the application's role acting for the
    tenant, writing its audit record as every member's search does, after the answer (the wall and the audit; with
    ``access``, the reader, also under ``ACCESS_POLICY``). The order alternates between queries so
    neither side always runs on the warmer cache."""
    from django.conf import settings

    from audit.services import audit_reads_deferred

    measured = []
    modes = (("(g) vector", "vector", "none"), ("(h) hybrid", "hybrid", "none"),
             ("(i) hybrid+parent", "hybrid", "parent"))
    if access is not None:
        modes = (("(j) vector, access policy", "vector", "none"), ("(k) hybrid, access policy", "hybrid", "none"),
                 ("(l) hybrid+parent, access policy", "hybrid", "parent"))
    for label, mode, expand in modes:
        sides = {}
        for wall in ((False, True) if qi % 2 else (True, False)):
            if wall:
                with connection.cursor() as cursor:
                    cursor.execute(f'SET ROLE "{settings.BULKHEAD_APP_DB_ROLE}"')
                try:
                    # As in a request (audit.middleware): the search's record is kept during the answer
                    # and written after it, by the same connection and role, outside the timed part.
                    with audit_reads_deferred():
                        sides[wall] = _as_a_request(tenant_id, access=access, mode=mode, expand=expand,
                                                    audit=audit, **common)
                finally:
                    with connection.cursor() as cursor:
                        cursor.execute("RESET ROLE")
            else:
                sides[wall] = _timed(search, mode=mode, expand=expand, audit=False, **common)
        for wall in (False, True):
            answer, ms = sides[wall]
            name = f"{label}, RLS {'on' if wall else 'off'}"
            measured.append((name, [h.chunk_id for h in answer.results], ms, answer.plan))
    for i in range(0, len(measured), 2):
        if measured[i][1] != measured[i + 1][1]:
            DIFFERENT_UNDER_THE_WALL[measured[i][0].rsplit(",", 1)[0]] += 1
    return measured


# Searches whose answer under the wall differed from the owner's, by method (reported; expected none).
DIFFERENT_UNDER_THE_WALL: Counter = Counter()


def measure(*, texts: list[str], queries: int, top_k: int = 10, phase: str = "all", truth: dict | None = None,
            log=print, wall: str = "", audit: bool = True) -> dict:
    """Run the methods of ``phase`` for every query and reader; returns {(reader, method): Series}.

    ``phase``: "baseline" runs (a) and (b) -- on the shared HNSW index only, before any
    per-tenant index exists, because (b) stands for the common single-index setup (with a
    tenant's partial index in place the planner would use it for (b) too); "ours" runs
    (c)-(f), with recall against the exact answers (a) found in the baseline phase (``truth``).
    Queries: the Chroma questions, then sentences drawn from ``texts``; query ``i`` runs in
    tenant ``i % T`` for each of its readers.
    """
    _check_database()
    texts_q = corpus_queries(texts, queries)
    qvecs = query_vectors(texts_q)  # cached: every method sees the same vectors
    from accounts.selectors import reader_for
    from kb.search import embed_query

    embed_query("warm up the model")
    t0 = time.perf_counter()
    for query in texts_q[:20]:
        embed_query(query)
    embed_ms = (time.perf_counter() - t0) * 1000 / min(20, len(texts_q))
    started = time.monotonic()
    tenants, members = _members()
    results: dict[tuple[str, str], Series] = {}
    truth = {} if truth is None else truth
    for warm in range(2):  # first pass warms caches and is thrown away
        for qi, (query, qvec) in enumerate(zip(texts_q, qvecs, strict=True)):
            if warm == 0 and qi >= 20:
                break
            tenant = tenants[qi % len(tenants)]
            version = IndexVersion.objects.get(tenant=tenant, is_active=True)
            for name, *_ in READERS:
                member = members[(tenant.id, name)]
                measured = []
                if phase in ("baseline", "all"):
                    qs = readable_chunks(reader_for(member), version.pk, SearchFilters())
                    exact, t_exact = _timed(vector_exact, qs, qvec, top_k)
                    truth[(qi, name)] = {r.id for r in exact}
                    plain, t_plain = _timed(vector_hnsw, qs, qvec, top_k, ef_search=40, iterative=False)
                    measured += [("(a) exact scan", [r.id for r in exact], t_exact, None),
                                 ("(b) HNSW + WHERE", [r.id for r in plain], t_plain, None)]
                if phase in ("ours", "all") and wall:
                    common = {"member": member, "query": query, "top_k": top_k, "index_version": version,
                              "query_vector": qvec}
                    access = reader_for(member) if wall == "access" else None
                    measured += _wall_pairs(tenant.id, common, qi, access=access, audit=audit)
                elif phase in ("ours", "all"):
                    common = {"member": member, "query": query, "top_k": top_k, "index_version": version,
                              "query_vector": qvec}
                    ours, t_ours = _timed(search, mode="vector", expand="none", **common)
                    hybrid, t_hybrid = _timed(search, mode="hybrid", expand="none", **common)
                    expanded, t_exp = _timed(search, mode="hybrid", expand="parent", **common)
                    vexp, t_vexp = _timed(search, mode="vector", expand="parent", **common)
                    measured += [
                        ("(c) search() vector", [h.chunk_id for h in ours.results], t_ours, ours.plan),
                        ("(d) search() hybrid", [h.chunk_id for h in hybrid.results], t_hybrid, hybrid.plan),
                        ("(e) search() hybrid+parent", [h.chunk_id for h in expanded.results], t_exp, expanded.plan),
                        ("(f) search() vector+parent", [h.chunk_id for h in vexp.results], t_vexp, vexp.plan),
                    ]
                if warm == 0:
                    continue
                expected = truth[(qi, name)]
                full = min(top_k, len(expected))
                for method, ids, ms, plan in measured:
                    series = results.setdefault((name, method), Series())
                    series.latencies.append(ms)
                    if method[1] in "abcfgj":
                        series.recalls.append(len(set(ids) & expected) / full if full else 1.0)
                    if len(ids) < top_k:
                        series.short_pages += 1
                    if plan:
                        series.plans[plan] = series.plans.get(plan, 0) + 1
        log(f"{phase} pass {warm} done ({time.monotonic() - started:.0f}s)")
    return {"series": results, "queries": len(texts_q), "embed_ms": embed_ms, "truth": truth}


def prepare(*, chunks: int, django_source, log=print, corpus: int = CORPUS_SIZE) -> tuple[list[str], np.ndarray]:
    """The cached texts and the vectors embedded so far (no model call here); ``corpus`` names a
    corpus built with that many texts (``python -m bench.search_bench_corpus N``)."""
    texts, vectors = build(corpus, django_source=django_source, log=log, available_only=True)
    return texts[: len(vectors)], vectors


def report(build_stats: dict, measured: dict, readers=READERS) -> str:
    """A Markdown table of the measured series."""
    lines = []
    if build_stats.get("chunks"):
        lines.append(
            f"Rows: {build_stats['chunks']:,} chunks over {build_stats['tenants']} tenants "
            f"({build_stats['real_vectors']:,} real MiniLM embeddings of real text; the rest are noisy copies). "
            f"Load (COPY) {build_stats['load_s']:.0f} s, HNSW build {build_stats['hnsw_build_s']:.0f} s; "
            f"table with indexes {build_stats['table_size']}, HNSW index {build_stats['hnsw_size']}."
        )
    if build_stats.get("tenant_indexes"):
        lines.append(
            f"Per-tenant HNSW indexes: {build_stats['tenant_indexes']} built in {build_stats['tenant_index_build_s']:.0f} s "
            f"(each {', '.join(map(str, build_stats['per_index_s']))} s), {build_stats['tenant_index_mb']:.0f} MiB in all, "
            f"rows per index {build_stats['tenant_index_rows']}."
        )
    lines.append(
        f"{measured['queries']} queries x {len(readers)} readers; query embedding {measured['embed_ms']:.1f} ms/query "
        "(not included below). Latency in ms, recall@10 against (a)."
    )
    walled = sorted({method.rsplit(",", 1)[0] for _, method in measured["series"] if method.endswith("RLS on")})
    if walled:
        lines.append("")
        lines.append("All readers pooled, each search with the tenant wall and its audit record (RLS on: the "
                     "application's role, the tenant set and cleared as a request does, the search recorded after the "
                     "answer as a request records it, outside the timed part) and "
                     "without either (RLS off: the owner, audit=False), side by side:")
        lines.append("")
        lines.append(f"Answers that differed between the two sides: {dict(DIFFERENT_UNDER_THE_WALL) or 'none'}.")
        lines.append("")
        lines.append("| method | p50 off | p50 on | p95 off | p95 on | p95 on/off |")
        lines.append("|---|---:|---:|---:|---:|---:|")
        for label in walled:
            pooled = {}
            for side in ("off", "on"):
                pooled[side] = Series(latencies=[
                    ms for (_, method), series in measured["series"].items() if method == f"{label}, RLS {side}"
                    for ms in series.latencies
                ]).row()
            lines.append(f"| {label} | {pooled['off'][0]:.1f} | {pooled['on'][0]:.1f} | {pooled['off'][1]:.1f} | "
                         f"{pooled['on'][1]:.1f} | {pooled['on'][1] / pooled['off'][1]:.3f} |")
    lines.append("")
    lines.append("| reader reads | method | p50 ms | p95 ms | recall@10 | pages < 10 rows | plans |")
    lines.append("|---|---|---:|---:|---:|---:|---|")
    for name, _, _, share in readers:
        for (reader, method), series in sorted(measured["series"].items()):
            if reader != name:
                continue
            p50, p95, recall, short = series.row()
            plans = ", ".join(f"{k} {v}" for k, v in sorted(series.plans.items()))
            rec = "" if recall is None else f"{recall:.3f}"
            lines.append(f"| {share:.0%} | {method} | {p50:.1f} | {p95:.1f} | {rec} | {short} | {plans} |")
    return "\n".join(lines)
