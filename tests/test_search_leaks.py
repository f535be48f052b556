"""Zero-leak property: whatever search returns lies in sections its caller may read.

Hypothesis generates tenants, groups, members (random clearance and groups) and
Markdown documents with random nested access markers (heading markers and regions),
ingests them through the real pipeline (a real Celery worker, the real model), and
then, for every member, every mode and every expansion (half the searches with the budget fill, whose
contexts are further chunks that are not hits), checks every returned text:

* each hit's span slices back to its text and lies in a body span of a readable section;
* each context is made only of body spans of readable sections of one document of the
  caller's tenant, plus ``## Title`` separators of readable sections, and nothing else;
* each heading path holds only titles of readable sections;
* every marker word in any returned text names a readable section of the caller's tenant
  (each section's sentences and title carry its own unique marker word, so a leaked
  sentence or title is caught even without spans).

Readability is decided by ``accounts.policy.can_read`` on the stored sections: the oracle
is the access rule itself, not the search code.
"""

from __future__ import annotations

import itertools
import re
import uuid
from collections import Counter
from contextlib import contextmanager

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from accounts.policy import can_read
from accounts.selectors import reader_for
from accounts.services import group_create, membership_create, tenant_create
from kb import retrieval
from kb.models import Chunk, Document, Section
from kb.search import embed_query, search
from kb.services import Upload, document_create
from kb.tenant_indexes import tenant_index_build, tenant_index_drop
from tests.ingestion_helpers import wait_for_jobs

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.worker]

LEVELS = ["public", "internal", "confidential", "restricted"]
GROUPS = ["red", "blue", "green"]
VOCAB = ["invoice", "refund", "server", "backup", "payroll", "vendor", "audit", "laptop"]
MARKER = re.compile(r"\bzq\d+x\b")
_serial = itertools.count()


def _marker() -> str:
    return f"zq{next(_serial)}x"


@st.composite
def narrower(draw, parent):
    """A policy every reader of which may read ``parent``: markers may only narrow what encloses them."""
    level = draw(st.sampled_from(LEVELS[LEVELS.index(parent[0]):]))
    if parent[1]:
        groups = draw(st.lists(st.sampled_from(sorted(parent[1])), min_size=1, max_size=len(parent[1]), unique=True))
    else:
        groups = draw(st.lists(st.sampled_from(GROUPS), max_size=2, unique=True))
    return level, tuple(sorted(groups))


UPLOAD_DEFAULT = ("internal", ())  # what _ingest uploads with


def _policy_text(policy) -> str:
    level, groups = policy
    return f"access: {level}" + (f"; groups: {' '.join(groups)}" if groups else "")


@st.composite
def paragraph(draw, marker: str) -> str:
    sentences = []
    for _ in range(draw(st.integers(1, 3))):
        words = draw(st.lists(st.sampled_from(VOCAB), min_size=3, max_size=7))
        words.insert(draw(st.integers(0, len(words))), marker)  # every sentence names its section
        sentences.append(" ".join(words).capitalize() + ".")
    return " ".join(sentences)


@st.composite
def body(draw, marker: str, region_depth: int, enclosing) -> str:
    parts = [draw(paragraph(marker)) for _ in range(draw(st.integers(1, 2)))]
    if region_depth and draw(st.booleans()):
        inner = _marker()
        policy = draw(narrower(enclosing))
        parts.append(
            f"<!-- {_policy_text(policy)} -->\n\n{draw(body(inner, region_depth - 1, policy))}\n\n<!-- /access -->"
        )
        if draw(st.booleans()):
            parts.append(draw(paragraph(marker)))  # the enclosing section's text continues after the region
    return "\n\n".join(parts)


@st.composite
def heading_section(draw, level: int, enclosing) -> str:
    marker = _marker()
    policy = draw(st.none() | narrower(enclosing))
    title = f"{draw(st.sampled_from(VOCAB)).capitalize()} {marker}"
    head = f"{'#' * level} {title}" + (f" <!-- {_policy_text(policy)} -->" if policy else "")
    effective = policy or enclosing
    parts = [head, draw(body(marker, 2, effective))]
    if level < 4:
        for _ in range(draw(st.integers(0, 2))):
            parts.append(draw(heading_section(level + 1, effective)))
    return "\n\n".join(parts)


@st.composite
def markdown_document(draw) -> str:
    level, groups = draw(narrower(UPLOAD_DEFAULT))
    front = f"---\ntitle: Doc\naccess: {level}\ngroups: [{', '.join(groups)}]\n---\n"
    root = _marker()
    parts = [f"# Manual {root}", draw(body(root, 1, (level, groups)))]
    for _ in range(draw(st.integers(1, 3))):
        parts.append(draw(heading_section(2, (level, groups))))
    return front + "\n\n".join(parts) + "\n"


members_strategy = st.lists(
    st.tuples(st.sampled_from(LEVELS), st.lists(st.sampled_from(GROUPS), max_size=3, unique=True)),
    min_size=3, max_size=4,
)


def _tenant(tag: str):
    tenant = tenant_create(slug=f"leak-{tag}-{uuid.uuid4().hex[:8]}", name=tag)
    for slug in GROUPS:
        group_create(tenant=tenant, slug=slug)
    return tenant


def _ingest(tenant, texts: list[str]) -> list[Document]:
    created = [
        document_create(
            tenant=tenant, created_by=None,
            upload=Upload(content=text.encode(), title=f"doc {i}", content_type="text/markdown"),
        )
        for i, text in enumerate(texts)
    ]
    jobs = wait_for_jobs([job.id for _, job in created])
    for job in jobs:
        assert job.status == "succeeded", job.error
    return [Document.objects.get(pk=document.pk) for document, _ in created]


class Oracle:
    """What one tenant's stored sections say: which marker is whose, and what is readable."""

    def __init__(self, tenant, documents: list[Document]):
        self.tenant = tenant
        self.documents = {d.id: d for d in documents}
        self.sections = list(Section.objects.filter(tenant=tenant))
        self.chunk_sections = dict(Chunk.objects.filter(tenant=tenant).values_list("id", "section_id"))
        self.by_marker: dict[str, Section] = {}
        for section in self.sections:
            text = self.documents[section.document_id].text
            found = set(MARKER.findall(section.title))
            for start, end in section.body_spans:
                found |= set(MARKER.findall(text[start:end]))
            for marker in found:
                self.by_marker.setdefault(marker, section)

    def readable_sections(self, reader) -> list[Section]:
        return [s for s in self.sections if can_read(reader, level=s.access_level, group_ids=s.access_groups)]


def _covered(text: str, span: tuple[int, int], spans: list[tuple[int, int]]) -> bool:
    """Whether every non-blank character of ``text[span]`` lies in the union of ``spans``.

    Blank characters may lie between two body spans of one section (a chunk joins two
    paragraphs across the blank line between them); anything else must be covered.
    """
    allowed = set()
    for start, stop in spans:
        allowed.update(range(start, stop))
    return all(i in allowed or text[i].isspace() for i in range(*span))


def check_response(response, reader, oracle: Oracle, foreign_markers: set[str], stats: Counter) -> None:
    readable = oracle.readable_sections(reader)
    readable_ids = {s.id for s in readable}
    readable_titles = {s.title for s in readable if s.title}

    def check_markers(text: str, where: str) -> None:
        for marker in MARKER.findall(text):
            assert marker not in foreign_markers, f"{where}: another tenant's text ({marker})"
            section = oracle.by_marker.get(marker)
            assert section is not None, f"{where}: unknown marker {marker}"
            assert section.id in readable_ids, f"{where}: marker {marker} of an unreadable section"

    def check_path(path: list[str], where: str) -> None:
        for title in path:
            assert title in readable_titles, f"{where}: heading path shows {title!r}"

    for hit in response.results:
        stats["hits"] += 1
        document = oracle.documents.get(hit.document_id)
        assert document is not None, "a hit from another tenant's document"
        assert document.text[hit.start : hit.end] == hit.text
        spans = [tuple(sp) for s in readable if s.document_id == document.id for sp in s.body_spans]
        assert _covered(document.text, (hit.start, hit.end), spans), "hit outside readable sections"
        assert hit.section_id in readable_ids
        check_markers(hit.text, "hit")
        check_path(hit.heading_path, "hit")
    hit_ids = {h.chunk_id for h in response.results}
    for context in response.contexts:
        stats["contexts"] += 1
        document = oracle.documents.get(context.document_id)
        assert document is not None, "a context from another tenant's document"
        if not set(context.chunk_ids) <= hit_ids:  # the budget fill's: one chunk of a readable section, its own text
            stats["filled"] += 1
            (chunk_id,) = context.chunk_ids
            assert oracle.chunk_sections.get(chunk_id) in readable_ids, "a fill context of an unreadable chunk"
        spans = [tuple(sp) for s in readable if s.document_id == document.id for sp in s.body_spans]
        remainder = context.text
        for start, end in context.spans:
            assert _covered(document.text, (start, end), spans), f"context span {start}-{end} outside readable sections"
            for para in re.split(r"\n[ \t]*\n", document.text[start:end]):
                para = para.strip()
                if para:
                    assert para in remainder or context.truncated, "span text missing from the context"
                    remainder = remainder.replace(para, "", 1)
        for line in remainder.splitlines():
            line = line.strip()
            if not line:
                continue
            if line.startswith("## "):
                assert line[3:] in readable_titles, f"context shows the title {line[3:]!r}"
            else:
                assert context.truncated, f"context text not from a readable span: {line!r}"
        check_markers(context.text, "context")
        check_path(context.heading_path, "context")


EXPANSIONS = [("none", "leaf"), ("parent", "leaf"), ("parent", "parent"), ("neighbors", "leaf")]
# The vector plans search() can choose (kb/search.py): an exact scan, the HNSW index shared by
# all tenants, or the tenant's own partial HNSW index. Each example forces one of them.
PLANS = ("exact", "hnsw", "tenant-hnsw")


@contextmanager
def planned(plan: str, tenants):
    """Force ``plan`` for vector searches: thresholds at 0 send every search to HNSW, and a
    partial index per tenant (both, so the foreign tenant's index exists too) selects the tenant's."""
    saved = (retrieval.EXACT_MAX_ROWS, retrieval.HNSW_MIN_FRACTION)
    if plan != "exact":
        retrieval.EXACT_MAX_ROWS, retrieval.HNSW_MIN_FRACTION = 0, 0.0
    if plan == "tenant-hnsw":
        for tenant in tenants:
            tenant_index_build(tenant_id=tenant.id)
    try:
        yield
    finally:
        retrieval.EXACT_MAX_ROWS, retrieval.HNSW_MIN_FRACTION = saved
        for tenant in tenants:
            tenant_index_drop(tenant_id=tenant.id)


def test_search_never_returns_unreadable_text(celery_worker):
    stats: Counter = Counter()

    @settings(deadline=None, max_examples=12, derandomize=True,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                     HealthCheck.function_scoped_fixture])
    @given(
        docs=st.lists(markdown_document(), min_size=1, max_size=3),
        other_doc=markdown_document(),
        members=members_strategy,
        words=st.lists(st.sampled_from(VOCAB), min_size=1, max_size=3),
        plan=st.sampled_from(PLANS),
    )
    def run(docs, other_doc, members, words, plan):
        retrieval.count_cache.clear()
        tenant, other = _tenant("a"), _tenant("b")
        documents = _ingest(tenant, docs)
        other_documents = _ingest(other, [other_doc, docs[0]])  # identical text in the other tenant too
        with planned(plan, [tenant, other]):
            check_all(tenant, documents, other, other_documents, members, words, plan)

    def check_all(tenant, documents, other, other_documents, members, words, plan):
        oracle = Oracle(tenant, documents)
        foreign = set(Oracle(other, other_documents).by_marker) - set(oracle.by_marker)
        query = " ".join(words)
        vector = embed_query(query)  # once per example; search() embeds raw queries the same way
        for i, (clearance, groups) in enumerate(members):
            member = membership_create(tenant=tenant, email=f"m{i}@{tenant.slug}.io", role="viewer",
                                       clearance=clearance, group_slugs=groups)
            reader = reader_for(member)
            stats["unreadable"] += len(oracle.sections) - len(oracle.readable_sections(reader))
            for mode in ("vector", "keyword", "hybrid"):
                for expand, level in EXPANSIONS:
                    response = search(member=member, query=query, top_k=8, mode=mode, expand=expand,
                                      expand_level=level, context_token_budget=400 if i % 2 else 4000,
                                      query_vector=vector, budget_fill=i % 2 == 0)
                    check_response(response, reader, oracle, foreign, stats)
                    if mode != "keyword" and response.results:
                        assert response.plan.split("+")[0] == plan, (plan, response.plan)
                        stats[f"plan {plan}"] += 1

    run()
    assert all(stats[f"plan {plan}"] for plan in PLANS), stats  # every vector plan was exercised
    # Not vacuous: things were found, expanded, and some sections were hidden from someone.
    assert stats["hits"] > 100 and stats["contexts"] > 50 and stats["unreadable"] > 20 and stats["filled"], stats
