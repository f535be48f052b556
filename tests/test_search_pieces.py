"""A chunk's pieces in the product (issue 30, ``ChunkingConfig.piece_weight``): written only for a version with
the option, from the chunk's own forward pass and through the embedding cache; a shadow build reaches them; a
search on such a version ranks an answer sentence inside a chunk about something else higher; and pieces
never bring a reader a chunk above their access.

Everything through the real pipeline (a real Celery worker, the real model) and the real search.
"""

from __future__ import annotations

import json
import uuid

import numpy as np
import pytest
from django.core.management import call_command

from accounts.models import Tenant
from accounts.selectors import reader_for
from accounts.services import membership_create, tenant_create
from ingestion.pieces import piece_spans, unpack_pieces
from kb import index_versions as versions
from kb import retrieval
from kb.embedder import embedder
from kb.index_versions import index_version_active
from kb.models import EMBEDDING_DIMENSIONS, Chunk, EmbeddingCacheEntry, IndexVersion
from kb.search import embed_query, search
from kb.search_types import SearchFilters
from kb.services import Upload, document_create
from tests.ingestion_helpers import wait_for_jobs

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.worker]

# The answer to QUESTION is one sentence of GARDEN, a paragraph about something else; GENERATOR_ROOM is about
# the generator as a whole but does not say when it is tested. Each document is one chunk.
QUESTION = "When is the backup generator tested?"
ANSWER = "The backup generator is tested on the first Monday of every month."
DOCUMENTS = {
    "garden": (
        "The office garden is looked after by volunteers from every floor. Tomatoes, beans and herbs grow in the "
        "raised beds along the south wall, and the compost bins sit behind the bike shed. Watering is shared on a "
        "rota pinned in the kitchen, and the hoses are rolled up every evening. " + ANSWER + " Harvested vegetables "
        "are left on the kitchen table for anyone to take, seeds are ordered each February, and the volunteers "
        "meet for lunch in the garden when the weather is fine. Slugs are kept off the lettuces with copper tape."
    ),
    "generator room": (
        "The generator room is in the basement next to the boiler. Its diesel tank holds enough fuel for two "
        "days, and the fuel supplier delivers when the gauge falls below half. Only the facilities team holds "
        "the key to the generator room."
    ),
    "power": (
        "The building's electrical supply comes from two feeds from the grid. Solar panels on the roof cover part "
        "of the daytime load, and the electricians inspect the switchboards once a year. Power outages are "
        "reported to the facilities desk, which keeps spare fuses and extension leads."
    ),
    "server room": (
        "The server room is cooled by two air conditioning units. Uninterruptible power supplies keep the servers "
        "running for fifteen minutes during an outage, and the IT team checks the batteries every quarter."
    ),
    "fire": (
        "Fire alarms are tested every Friday at ten in the morning. Evacuation drills happen twice a year, and the "
        "assembly point is the car park across the road. Fire wardens wear yellow vests."
    ),
}


def _ingest(tenant, documents: dict[str, str], content_type: str = "text/plain") -> dict[str, uuid.UUID]:
    created = {
        title: document_create(tenant=tenant, created_by=None,
                               upload=Upload(content=text.encode(), title=title, content_type=content_type))
        for title, text in documents.items()
    }
    for job in wait_for_jobs([job.id for _, job in created.values()]):
        assert job.status == "succeeded", job.error
    return {title: document.pk for title, (document, _) in created.items()}


def _build(version: IndexVersion):
    job = versions.index_version_build(version=version)
    (done,) = wait_for_jobs([job.id])
    assert done.status == "succeeded", done.error
    version.refresh_from_db()
    assert version.status == IndexVersion.Status.READY
    return done


def _pieces_version(tenant, weight: float = 0.4) -> IndexVersion:
    config = versions.index_version_config(settings=[f"piece_weight={weight}"])  # as kb_index/kb_eval --set say it
    assert config.piece_weight == weight
    version, created = versions.index_version_create(tenant=tenant, config=config, name=f"pieces {weight}")
    assert created and version.piece_weight == weight
    return version


def _rank(response, document_id) -> int | None:
    return next((hit.rank for hit in response.results if hit.document_id == document_id), None)


@pytest.fixture
def office(celery_worker):
    retrieval.count_cache.clear()
    tenant = tenant_create(slug=f"pieces-{uuid.uuid4().hex[:8]}", name="Pieces Co")
    admin = membership_create(tenant=tenant, email=f"admin@{tenant.slug}.io", role="admin", clearance="restricted")
    # A tenant whose active version has no pieces (every version stored before the option), as the default
    # (pieces 0.5 since issue 30's thirteenth round) would otherwise make it.
    plain, _ = versions.index_version_create(
        tenant=tenant, config=versions.index_version_config(settings=["piece_weight=0"]), name="plain")
    versions.index_version_activate(version=plain)
    ids = _ingest(tenant, DOCUMENTS)
    return tenant, admin, ids


def test_pieces_are_written_only_for_a_version_with_them_and_the_cache_serves_them(office):
    tenant, _admin, ids = office
    plain = index_version_active(tenant=tenant)
    assert plain.piece_weight == 0
    assert Chunk.objects.filter(index_version=plain).count() == len(DOCUMENTS)  # one chunk each
    assert not Chunk.objects.filter(index_version=plain, pieces__isnull=False).exists()
    assert not EmbeddingCacheEntry.objects.filter(tenant=tenant, pieces__isnull=False).exists()

    pieced = _pieces_version(tenant)
    job = _build(pieced)
    # The cache held these texts without pieces: they are embedded again (one forward pass each batch), and
    # the cache entries get their pieces.
    children = list(job.children.all())
    assert sum(c.stats["embedded"] for c in children) == len(DOCUMENTS)
    assert sum(c.stats["cache_hits"] for c in children) == 0
    assert EmbeddingCacheEntry.objects.filter(tenant=tenant, pieces__isnull=True).count() == 0

    before = {c.content_hash: np.asarray(c.embedding) for c in Chunk.objects.filter(index_version=plain)}
    rows = list(Chunk.objects.filter(index_version=pieced))
    assert len(rows) == len(DOCUMENTS)
    model = embedder()
    for row in rows:
        assert row.content_hash in before  # the same chunks as the version without pieces
        np.testing.assert_allclose(np.asarray(row.embedding), before[row.content_hash], atol=1e-5)
        pieces = unpack_pieces(row.pieces, EMBEDDING_DIMENSIONS)
        assert len(pieces) == len(piece_spans(row.embed_text)) > 1  # every sentence of these short chunks
        _, (expected,) = model.embed_with_pieces([row.embed_text])
        np.testing.assert_allclose(pieces, expected, atol=2e-3)  # float16
    garden = Chunk.objects.get(index_version=pieced, document_id=ids["garden"])
    answer = model.embed([ANSWER])[0]
    similarities = unpack_pieces(garden.pieces, EMBEDDING_DIMENSIONS) @ answer
    texts = [garden.embed_text[a:b] for a, b in piece_spans(garden.embed_text)]
    assert texts[int(np.argmax(similarities))] == ANSWER  # its nearest piece is the answer sentence
    assert float(np.max(similarities)) > float(np.asarray(garden.embedding) @ answer) + 0.2  # the chunk dilutes it

    # Another version with pieces and the same chunks: every vector and every piece from the cache, no model call.
    again = _build(_pieces_version(tenant, 0.6))
    children = list(again.children.all())
    assert sum(c.stats["cache_hits"] for c in children) == len(DOCUMENTS)
    assert sum(c.stats["model_calls"] for c in children) == 0
    assert not Chunk.objects.filter(index_version__config_hash__startswith=_pieces_version_hash(0.6),
                                    pieces__isnull=True).exists()
    assert not Chunk.objects.filter(index_version=plain, pieces__isnull=False).exists()  # the active one untouched


def _pieces_version_hash(weight: float) -> str:
    return versions.index_version_config(settings=[f"piece_weight={weight}"]).config_hash()


def test_an_answer_sentence_inside_a_chunk_about_something_else_ranks_higher_with_pieces(office):
    tenant, admin, ids = office
    plain = index_version_active(tenant=tenant)
    pieced = _pieces_version(tenant)
    _build(pieced)  # a shadow build: the active version answers meanwhile

    def ranks(version, mode):
        response = search(member=admin, query=QUESTION, mode=mode, top_k=5, index_version=version, audit=False)
        return response, {title: _rank(response, document_id) for title, document_id in ids.items()}

    off, off_ranks = ranks(plain, "vector")
    on, on_ranks = ranks(pieced, "vector")
    assert off_ranks["generator room"] == 1 and off_ranks["garden"] == 2  # the diluted chunk second
    assert on_ranks["garden"] == 1 and on_ranks["generator room"] == 2  # its answer sentence lifts it
    garden_off = next(h for h in off.results if h.document_id == ids["garden"])
    garden_on = next(h for h in on.results if h.document_id == ids["garden"])
    assert garden_on.score > garden_off.score
    for hit in on.results:  # the answer says no more about the pieces than the score
        assert hit.distance == pytest.approx(1.0 - hit.score)
        assert not hasattr(hit, "pieces")
    # Hybrid: every candidate re-scored before the fusion (the keyword side already puts the garden first here:
    # "backup" and "tested" are in it): each hit carries the re-scored distance, and the garden's lead grows.
    hybrid_off, _ = ranks(plain, "hybrid")
    hybrid_on, _ = ranks(pieced, "hybrid")
    rescored = {h.chunk_id: h.distance for h in on.results}
    assert [h.distance for h in hybrid_on.results] == [pytest.approx(rescored[h.chunk_id]) for h in hybrid_on.results]
    assert [h.document_id for h in hybrid_on.results[:2]] == [ids["garden"], ids["generator room"]]
    assert [h.document_id for h in hybrid_off.results[:2]] == [ids["garden"], ids["generator room"]]
    lead = [r.results[0].score - r.results[1].score for r in (hybrid_off, hybrid_on)]
    assert lead[1] > lead[0] + 0.05
    # Keyword mode has no query vector: the same answer on both versions.
    _, keyword_off = ranks(plain, "keyword")
    _, keyword_on = ranks(pieced, "keyword")
    assert keyword_on == keyword_off

    # Activated, it is what a search without a version uses.
    versions.index_version_activate(version=pieced)
    response = search(member=admin, query=QUESTION, mode="vector", top_k=5, audit=False)
    assert response.index_version_id == pieced.pk and _rank(response, ids["garden"]) == 1


RESTRICTED = (
    "# Plant room\n\n"
    "The boilers are serviced every autumn by the heating contractor.\n\n"
    "## Maintenance <!-- access: restricted -->\n\n"
    "The kitchen fridge is cleaned out on Fridays, and the coffee machine is descaled every week. " + ANSWER
    + " The recycling is collected on Tuesdays.\n"
)


def test_pieces_never_bring_a_reader_a_chunk_above_their_access(celery_worker):
    retrieval.count_cache.clear()
    tenant = tenant_create(slug=f"pieces-acl-{uuid.uuid4().hex[:8]}", name="Pieces ACL")
    pieced = _pieces_version(tenant)
    versions.index_version_activate(version=pieced)  # no document yet: it covers them all
    ids = _ingest(tenant, {"plant room": RESTRICTED}, content_type="text/markdown")
    _ingest(tenant, {k: v for k, v in DOCUMENTS.items() if k != "garden"})
    secret = Chunk.objects.get(index_version=pieced, document_id=ids["plant room"], access_level=3)
    assert secret.pieces is not None and ANSWER in secret.text
    staff = membership_create(tenant=tenant, email=f"staff@{tenant.slug}.io", role="viewer", clearance="internal")
    boss = membership_create(tenant=tenant, email=f"boss@{tenant.slug}.io", role="viewer", clearance="restricted")
    for mode in ("vector", "hybrid"):
        for query in (QUESTION, ANSWER):
            seen = search(member=staff, query=query, mode=mode, top_k=20, audit=False)
            assert secret.pk not in {h.chunk_id for h in seen.results}, (mode, query)
            assert all("Monday" not in h.text for h in seen.results)
            assert all("Monday" not in c.text for c in seen.contexts)
        top = search(member=boss, query=ANSWER, mode=mode, top_k=5, audit=False)
        assert top.results[0].chunk_id == secret.pk  # the clearance that may read it finds it first

    # A candidate list that (wrongly) held the restricted chunk: its pieces are read through the reader's
    # readable chunks, so it is dropped, not scored.
    vector = embed_query(ANSWER)
    reader = reader_for(staff)
    rows, _ = retrieval.vector_candidates(reader_for(boss), pieced.pk, SearchFilters(), vector, 20)
    assert secret.pk in {r.id for r in rows}
    (scored,) = retrieval.by_pieces(reader, pieced.pk, SearchFilters(), [rows], vector, 0.4)
    assert secret.pk not in {r.id for r in scored}
    assert {r.id for r in scored} == {r.id for r in rows} - {secret.pk}


def test_kb_eval_loads_corpora_into_the_default_with_pieces_and_set_makes_one_without(celery_worker, tmp_path):
    corpora = tmp_path / "corpora"
    corpora.mkdir()
    for title in ("garden", "generator room", "power"):
        (corpora / f"{title.replace(' ', '-')}.txt").write_text(DOCUMENTS[title] + "\n")
    start = DOCUMENTS["garden"].index(ANSWER)
    golden = tmp_path / "golden.jsonl"
    golden.write_text(json.dumps({"question": QUESTION, "document": "garden",
                                  "spans": [[start, start + len(ANSWER)]]}) + "\n")
    out = tmp_path / "eval.json"
    before = set(Tenant.objects.values_list("pk", flat=True))
    # The default has pieces (0.5 since issue 30's thirteenth round); --set makes one more version without.
    call_command("kb_eval", "--load-corpora", str(corpora), "--golden", str(golden), "--k", "1,3", "--mode",
                 "vector", "--set", "piece_weight=0", "--json", str(out), "--keep")
    data = json.loads(out.read_text())
    assert [("pieces=0.5" in v["config"]) for v in data["versions"]] == [True, False]
    # Through the real search: the garden is the first hit with pieces, not without.
    assert [v["document"]["1"]["hit"]["mean"] for v in data["versions"]] == [1.0, 0.0]
    (tenant,) = Tenant.objects.exclude(pk__in=before)
    pieced = IndexVersion.objects.get(tenant=tenant, config_hash=_pieces_version_hash(0.5))
    assert Chunk.objects.filter(index_version=pieced).count() == 3
    assert not Chunk.objects.filter(index_version=pieced, pieces__isnull=True).exists()
    assert not Chunk.objects.filter(tenant=tenant, pieces__isnull=False).exclude(index_version=pieced).exists()


def test_a_version_reads_only_its_piece_weight_and_a_malformed_one_is_an_error():
    """Search asks the version for its weight: a config stored before the option (or a benchmark's, with keys of
    its own) means 0; a weight outside [0, 1) is an error, never "off"."""
    assert IndexVersion(config={}).piece_weight == 0
    assert IndexVersion(config={"benchmark": True}).piece_weight == 0
    assert IndexVersion(config={"target_tokens": 64}).piece_weight == 0
    assert IndexVersion(config={"piece_weight": 0.4}).piece_weight == 0.4
    for broken in (1, 1.5, -0.1, "0.4", True, None):
        with pytest.raises(ValueError, match="piece_weight"):
            IndexVersion(config={"piece_weight": broken}).piece_weight  # noqa: B018


def test_search_with_pieces_never_returns_unreadable_text(celery_worker):
    """``tests/test_search_leaks.py``'s property with pieces on: both tenants search a version with
    ``piece_weight`` 0.4 (active before anything is ingested), in the modes pieces re-score, under every vector
    plan; every returned text lies in sections the caller may read."""
    from collections import Counter

    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from tests import test_search_leaks as leaks

    stats: Counter = Counter()

    def pieces_tenant(tag: str):
        tenant = leaks._tenant(tag)
        versions.index_version_activate(version=_pieces_version(tenant))
        return tenant

    @settings(deadline=None, max_examples=4, derandomize=True,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                     HealthCheck.function_scoped_fixture])
    @given(docs=st.lists(leaks.markdown_document(), min_size=1, max_size=3), other_doc=leaks.markdown_document(),
           members=leaks.members_strategy, words=st.lists(st.sampled_from(leaks.VOCAB), min_size=1, max_size=3),
           plan=st.sampled_from(leaks.PLANS))
    def run(docs, other_doc, members, words, plan):
        retrieval.count_cache.clear()
        tenant, other = pieces_tenant("pa"), pieces_tenant("pb")
        documents = leaks._ingest(tenant, docs)
        other_documents = leaks._ingest(other, [other_doc, docs[0]])
        assert not Chunk.objects.filter(tenant__in=[tenant, other], pieces__isnull=True).exists()
        oracle = leaks.Oracle(tenant, documents)
        foreign = set(leaks.Oracle(other, other_documents).by_marker) - set(oracle.by_marker)
        query = " ".join(words)
        vector = embed_query(query)
        with leaks.planned(plan, [tenant, other]):
            for i, (clearance, groups) in enumerate(members):
                member = membership_create(tenant=tenant, email=f"m{i}@{tenant.slug}.io", role="viewer",
                                           clearance=clearance, group_slugs=groups)
                reader = reader_for(member)
                stats["unreadable"] += len(oracle.sections) - len(oracle.readable_sections(reader))
                for mode in ("vector", "hybrid"):
                    for expand, level in (("none", "leaf"), ("parent", "leaf")):
                        response = search(member=member, query=query, top_k=8, mode=mode, expand=expand,
                                          expand_level=level, query_vector=vector, audit=False)
                        leaks.check_response(response, reader, oracle, foreign, stats)

    run()
    assert stats["hits"] > 30 and stats["unreadable"] > 5, stats  # not vacuous
