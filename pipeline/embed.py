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
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from accounts.models import Membership, Role
from accounts.policy import can_read
from accounts.selectors import reader_for
from kb.embedder import embedder, embedder_name
from kb.jobs import job_progress
from kb.models import Chunk, EmbeddingCacheEntry, IngestionJob
from pipeline.plan import Plan

EMBED_BATCH = 256  # texts per model call between progress updates; bigger calls sort by length better

Scope = tuple  # (tenant id, access level, sorted group ids): where a cached vector may be reused
Key = tuple  # (scope, content hash)


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

    def lookup(self, keys: Iterable[Key]) -> dict[Key, list[float]]:
        """The cached vectors of these keys' hashes, under every scope they were cached in (a caller
        takes only those its job may use)."""
        hits: dict[Key, list[float]] = {}
        by_tenant: dict[int, set[str]] = {}
        for scope, h in keys:
            by_tenant.setdefault(scope[0], set()).add(h)
        for tenant_id, hashes in by_tenant.items():
            ordered = sorted(hashes)
            for i in range(0, len(ordered), 1000):
                rows = EmbeddingCacheEntry.objects.filter(
                    tenant_id=tenant_id, model=self.model_name, content_hash__in=ordered[i : i + 1000]
                ).values_list("content_hash", "access_level", "access_groups", "embedding")
                for h, level, groups, vector in rows:
                    hits[((tenant_id, level, tuple(sorted(groups))), h)] = vector
        return hits

    @staticmethod
    def own_chunks(plan: Plan, hashes: set[str], may_use: Callable[[Scope], bool]) -> dict[str, list[float]]:
        """Vectors of the document's own stored chunks (any version) with these hashes, under a scope
        the job may use."""
        own: dict[str, list[float]] = {}
        rows = Chunk.objects.filter(document_id=plan.document.pk, content_hash__in=sorted(hashes)).values_list(
            "content_hash", "access_level", "access_groups", "embedding"
        )
        for h, level, groups, vector in rows:
            if may_use((plan.document.tenant_id, level, tuple(sorted(groups)))):
                own[h] = vector
        return own

    def put(self, keys: list[Key], vectors: list) -> None:
        """Cache what the model embedded, each under its own scope."""
        EmbeddingCacheEntry.objects.bulk_create(
            [
                EmbeddingCacheEntry(tenant_id=scope[0], access_level=scope[1], access_groups=list(scope[2]),
                                    model=self.model_name, content_hash=h, embedding=v)
                for (scope, h), v in zip(keys, vectors, strict=True)
            ],
            ignore_conflicts=True,
        )


def embed_plans(plans: list[Plan]) -> dict:
    """Fill each plan's vectors: the tenant's cache first, the model for the rest, in batches across documents.

    The cache is scoped by tenant and policy (:class:`EmbeddingCache`); the model sees each
    distinct (scope, text) once. Stats are kept per job, never summed across tenants.
    """
    cache = EmbeddingCache(embedder_name())
    texts: dict[Key, str] = {}  # (scope, content hash) -> embed text
    keys_by_plan: list[list[Key]] = []
    for plan in plans:
        scopes = cache.scopes(plan)
        keys = [(scopes[c.section_key], c.content_hash) for c in plan.chunks]
        for key, chunk in zip(keys, plan.chunks, strict=True):
            texts.setdefault(key, chunk.embed_text)
        keys_by_plan.append(keys)

    vectors: dict[Key, list[float]] = {}
    hits = cache.lookup(texts)
    # A key is served from the cache for a job only when that job may use its scope; anything
    # else is embedded in this run (and then serves every job of the run).
    served: list[set[Key]] = []
    for keys, plan in zip(keys_by_plan, plans, strict=True):
        may_use = cache.may_use(plan.job)
        served.append({k for k in keys if k in hits and may_use(k[0])})
        wanted = {k[1] for k in keys} - {k[1] for k in served[-1]}
        if wanted:
            own = cache.own_chunks(plan, wanted, may_use)
            for key in keys:
                if key[1] in own:
                    hits.setdefault(key, own[key[1]])
                    served[-1].add(key)
    key_sets = [set(keys) for keys in keys_by_plan]
    missing = [key for key in texts if not all(key in done for done, keys in zip(served, key_sets, strict=True)
                                               if key in keys)]
    vectors.update({k: hits[k] for done in served for k in done})
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
    pending = list(missing)
    if pending:
        model = embedder()
        while pending:
            if gone:
                live = [keys for index, keys in enumerate(key_sets) if index not in gone]
                pending = [key for key in pending if any(key in keys for keys in live)]
                if not pending:
                    break
            batch, pending = pending[:EMBED_BATCH], pending[EMBED_BATCH:]
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
    for index, (plan, keys, stats) in enumerate(zip(plans, keys_by_plan, per_job, strict=True)):
        # A deleted document's plan stores nothing (store_plan finds no document), so needs no vectors.
        plan.vectors = {} if index in gone else {c.content_hash: vectors[k] for c, k in zip(plan.chunks, keys,
                                                                                          strict=True)}
        plan.stats = stats
        plan.embedded = {k[1] for k in keys if k in model_made}
    return {
        "chunks": sum(s["chunks"] for s in per_job), "cache_hits": sum(s["cache_hits"] for s in per_job),
        "embedded": len(missing), "model_calls": (len(missing) + EMBED_BATCH - 1) // EMBED_BATCH,
    }


