"""Ingestion, stage 3: the plans' vectors -- the scoped cache first, the model for the rest, in batches
shared by every document of a run (:func:`embed_plans`).

The cache's one rule lives in :class:`EmbeddingCache`: a vector is cached under the scope it was
embedded for -- the tenant and the effective policy of its section -- and a job may take one only from
a scope its creator could read anyway (a cache hit shows in a job's progress, stats and duration).
What the model embeds is cached by the store step (``pipeline.store.store_plan``), under the policies it
stores the chunks with, re-checked under row locks: never here, under the plan's, which a policy change
may have narrowed meanwhile (found attacking policy-change races: the text of a document narrowed while
it was embedded stayed cached under the old, wider scope, and a reader of that scope confirmed guesses of
it by its cache hits).

Pieces (issue 30, ``ChunkingConfig.piece_weight``): a plan of a version with pieces needs each chunk's pieces
too (``ingestion.pieces``). They come from the same forward pass as the vector
(``Embedder.embed_with_pieces``), are cached with it (``EmbeddingCacheEntry.pieces``, under the same scope
and rule: they are derived from the same text alone), and a cached entry or stored chunk *without* pieces
does not serve such a plan: its text is embedded again (a model call, counted as any other) and the store
step adds the pieces to the entry. Plans of versions without pieces are embedded as before (``embed``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from accounts.models import Membership, Role
from accounts.policy import can_read
from accounts.selectors import reader_for
from ingestion.pieces import pack_pieces
from kb.embedder import embedder, embedder_name
from kb.jobs import job_progress
from kb.models import Chunk, EmbeddingCacheEntry, IngestionJob
from pipeline.plan import Plan

EMBED_BATCH = 256  # texts per model call between progress updates; bigger calls sort by length better

Scope = tuple  # (tenant id, access level, sorted group ids): where a cached vector may be reused
Key = tuple  # (scope, content hash)
Cached = tuple  # (vector, stored pieces or None)


class EmbeddingCache:
    """The tenant's content-hash cache of vectors for one model, and its scope rule.

    * :meth:`scopes`: each section of a plan caches under (tenant, its effective policy);
    * :meth:`may_use`: which scopes a job may take vectors from -- in its own tenant, under a policy
      its creator may read; jobs without a creator (the CLI, re-derivations) and jobs of tenant admins
      (who may grant themselves any access) use the tenant's whole cache; a creator no longer active
      in the tenant, none;
    * :meth:`lookup` (the cache), :meth:`own_chunks` (the document's stored chunks of any version,
      under the same rule: the creator of a replacement may not learn what the old content held above
      their access) and :meth:`put` (what the model embedded, cached under its scope: called by the store
      step, with the policies it stores).
    """

    def __init__(self, model_name: str):
        self.model_name = model_name

    @staticmethod
    def scopes(plan: Plan) -> dict[str, Scope]:
        """Each section key's cache scope: the tenant and the section's effective policy."""
        return {
            row.key: (plan.document.tenant_id, row.access_level, tuple(sorted(row.access_groups)))
            for row in plan.section_rows
        }

    @staticmethod
    def may_use(job: IngestionJob) -> Callable[[Scope], bool]:
        """Which cache scopes this job may take vectors from (see the class)."""
        member = None
        if job.created_by_id is not None:
            member = Membership.objects.filter(
                tenant_id=job.tenant_id, user_id=job.created_by_id, is_active=True
            ).first()
            if member is None:
                return lambda scope: False
        if member is None or member.role == Role.ADMIN:
            return lambda scope: scope[0] == job.tenant_id
        reader = reader_for(member)
        return lambda scope: scope[0] == job.tenant_id and can_read(reader, level=scope[1], group_ids=scope[2])

    def lookup(self, keys: Iterable[Key]) -> dict[Key, Cached]:
        """The cached vectors (and pieces, None where the entry has none) of these keys' hashes, under every
        scope they were cached in (a caller takes only those its job may use)."""
        hits: dict[Key, Cached] = {}
        by_tenant: dict[int, set[str]] = {}
        for scope, h in keys:
            by_tenant.setdefault(scope[0], set()).add(h)
        for tenant_id, hashes in by_tenant.items():
            ordered = sorted(hashes)
            for i in range(0, len(ordered), 1000):
                rows = EmbeddingCacheEntry.objects.filter(
                    tenant_id=tenant_id, model=self.model_name, content_hash__in=ordered[i : i + 1000]
                ).values_list("content_hash", "access_level", "access_groups", "embedding", "pieces")
                for h, level, groups, vector, pieces in rows:
                    hits[((tenant_id, level, tuple(sorted(groups))), h)] = (vector, _stored(pieces))
        return hits

    @staticmethod
    def own_chunks(plan: Plan, hashes: set[str], may_use: Callable[[Scope], bool], *,
                   pieces: bool = False) -> dict[str, Cached]:
        """Vectors (and pieces) of the document's own stored chunks (any version) with these hashes, under a
        scope the job may use; with ``pieces``, only chunks that hold pieces."""
        own: dict[str, Cached] = {}
        rows = Chunk.objects.filter(document_id=plan.document.pk, content_hash__in=sorted(hashes))
        if pieces:
            rows = rows.filter(pieces__isnull=False)
        for h, level, groups, vector, stored in rows.values_list(
            "content_hash", "access_level", "access_groups", "embedding", "pieces"
        ):
            if may_use((plan.document.tenant_id, level, tuple(sorted(groups)))):
                own[h] = (vector, _stored(stored))
        return own

    def put(self, keys: list[Key], vectors: list, pieces: list | None = None) -> None:
        """Cache what the model embedded, each under its own scope; with its pieces where given (an entry
        already cached without them gets them)."""
        pieces = pieces or [None] * len(keys)
        entries = [
            EmbeddingCacheEntry(tenant_id=scope[0], access_level=scope[1], access_groups=list(scope[2]),
                                model=self.model_name, content_hash=h, embedding=v, pieces=p)
            for (scope, h), v, p in zip(keys, vectors, pieces, strict=True)
        ]
        plain = [e for e in entries if e.pieces is None]
        with_pieces = [e for e in entries if e.pieces is not None]
        if plain:
            EmbeddingCacheEntry.objects.bulk_create(plain, ignore_conflicts=True)
        if with_pieces:
            EmbeddingCacheEntry.objects.bulk_create(
                with_pieces, update_conflicts=True, update_fields=["pieces"],
                unique_fields=["tenant", "model", "content_hash", "access_level", "access_groups"],
            )


def _stored(pieces) -> bytes | None:
    return None if pieces is None else bytes(pieces)


def wants_pieces(plan: Plan) -> bool:
    """Whether the plan's version stores its chunks' pieces (``ChunkingConfig.piece_weight`` > 0)."""
    return plan.version.piece_weight > 0


def embed_plans(plans: list[Plan]) -> dict:
    """Fill each plan's vectors (and, for a version with pieces, its pieces): the tenant's cache first, the
    model for the rest, in batches across documents.

    The cache is scoped by tenant and policy (:class:`EmbeddingCache`); the model sees each
    distinct (scope, text) once. Stats are kept per job, never summed across tenants.
    """
    cache = EmbeddingCache(embedder_name())
    texts: dict[Key, str] = {}  # (scope, content hash) -> embed text
    keys_by_plan: list[list[Key]] = []
    wanting = [wants_pieces(plan) for plan in plans]
    need_pieces: set[Key] = set()  # keys some plan needs the pieces of
    for plan, wants in zip(plans, wanting, strict=True):
        scopes = cache.scopes(plan)
        keys = [(scopes[c.section_key], c.content_hash) for c in plan.chunks]
        for key, chunk in zip(keys, plan.chunks, strict=True):
            texts.setdefault(key, chunk.embed_text)
        keys_by_plan.append(keys)
        if wants:
            need_pieces.update(keys)

    vectors: dict[Key, list[float]] = {}
    pieces: dict[Key, bytes | None] = {}
    hits = cache.lookup(texts)
    # A key is served from the cache for a job only when that job may use its scope (and, for a plan that
    # needs pieces, when the entry holds them); anything else is embedded in this run (and then serves every
    # job of the run).
    served: list[set[Key]] = []
    for keys, plan, wants in zip(keys_by_plan, plans, wanting, strict=True):
        may_use = cache.may_use(plan.job)
        served.append({k for k in keys if k in hits and may_use(k[0]) and (not wants or hits[k][1] is not None)})
        wanted = {k[1] for k in keys} - {k[1] for k in served[-1]}
        if wanted:
            own = cache.own_chunks(plan, wanted, may_use, pieces=wants)
            for key in keys:
                if key[1] in own:
                    if key not in hits or (wants and hits[key][1] is None):
                        hits[key] = own[key[1]]
                    served[-1].add(key)
    key_sets = [set(keys) for keys in keys_by_plan]
    missing = [key for key in texts if not all(key in done for done, keys in zip(served, key_sets, strict=True)
                                               if key in keys)]
    for done in served:
        for k in done:
            vectors[k], stored = hits[k]
            if stored is not None:
                pieces[k] = stored
    per_job = [
        {"chunks": len(keys), "cache_hits": len(done), "embedded": 0, "model_calls": 0}
        for keys, done in zip(keys_by_plan, served, strict=True)
    ]

    gone: set[int] = set()  # plans whose job went with its deleted document: nothing more is embedded for them

    def progress() -> None:
        for index, (plan, keys, done) in enumerate(zip(plans, keys_by_plan, served, strict=True)):
            if index not in gone and not job_progress(plan.job, done=sum(1 for k in keys if k in done),
                                                      stage="embedding"):
                gone.add(index)

    progress()
    model_made = set(missing)
    # Keys some plan needs the pieces of are embedded with them (one forward pass each batch); the rest as before.
    queues = [(True, [k for k in missing if k in need_pieces]), (False, [k for k in missing if k not in need_pieces])]
    model_calls = sum((len(queue) + EMBED_BATCH - 1) // EMBED_BATCH for _, queue in queues)
    if missing:
        model = embedder()
    for with_pieces, pending in queues:
        while pending:
            if gone:
                live = [keys for index, keys in enumerate(key_sets) if index not in gone]
                pending = [key for key in pending if any(key in keys for keys in live)]
                if not pending:
                    break
            batch, pending = pending[:EMBED_BATCH], pending[EMBED_BATCH:]
            if with_pieces:
                embedded, matrices = model.embed_with_pieces([texts[k] for k in batch])
                pieces.update((k, pack_pieces(m) if len(m) else None) for k, m in zip(batch, matrices, strict=True))
            else:
                embedded = model.embed([texts[k] for k in batch])
            vectors.update(zip(batch, embedded, strict=True))
            in_batch = set(batch)
            for stats, keys, done in zip(per_job, keys_by_plan, served, strict=True):
                mine = {k for k in keys if k in in_batch} - done
                if mine:
                    stats["model_calls"] += 1
                    stats["embedded"] += len(mine)
                    done.update(mine)
            progress()
    for index, (plan, keys, stats, wants) in enumerate(zip(plans, keys_by_plan, per_job, wanting, strict=True)):
        # A deleted document's plan stores nothing (store_plan finds no document), so needs no vectors.
        plan.vectors = {} if index in gone else {c.content_hash: vectors[k] for c, k in zip(plan.chunks, keys,
                                                                                          strict=True)}
        # A version with pieces stores every chunk's (None only where a text has no piece, which leaves the
        # chunk scored by its own vector); one without stores none.
        plan.pieces = {} if index in gone or not wants else {
            c.content_hash: pieces[k] for c, k in zip(plan.chunks, keys, strict=True)}
        plan.stats = stats
        plan.embedded = {k[1] for k in keys if k in model_made}
    return {
        "chunks": sum(s["chunks"] for s in per_job), "cache_hits": sum(s["cache_hits"] for s in per_job),
        "embedded": len(missing), "model_calls": model_calls,
    }
