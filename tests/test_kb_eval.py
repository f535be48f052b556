"""kb_eval: numbers on a tiny golden set equal hand-computed values; golden formats; --load-corpora.

The hand-checked tenant is built directly in the database (two documents, two sections
each, two index versions) and searched in keyword mode, so which chunks come back is
known exactly:

    A = "Zebras zebras graze.\\n\\nQuiet river bank.\\n"   a1 = [0, 20)   a2 = [22, 39)
    B = "One zebra sleeps.\\n\\nOwls watch stars.\\n"      b1 = [0, 17)   b2 = [19, 36)

Version "small" has one chunk per section; version "whole" one chunk per document
([0, 39) and [0, 36), filed under the first section). "zebra" matches a1 (twice, so it
ranks first) and b1; "owls stars" matches only b2.
"""

from __future__ import annotations

import csv
import json
import uuid

import numpy as np
import pytest
from django.core.management import CommandError, call_command

from accounts.errors import ApplicationError
from accounts.services import membership_create, tenant_create
from bench.evaluation import golden_resolve
from ingestion.chunking.tokens import default_counter
from ingestion.golden import GoldenQuestion, load_questions
from kb import retrieval
from kb.models import Document
from tests import factories

A = "Zebras zebras graze.\n\nQuiet river bank.\n"
B = "One zebra sleeps.\n\nOwls watch stars.\n"
GOLDEN = [
    {"question": "zebra", "document": "alpha.txt", "spans": [[0, 6]]},  # "Zebras"
    {"question": "zebra", "document": "beta", "spans": [[4, 9]]},  # "zebra" in B (by file stem)
    {"question": "owls stars", "document": "Beta notes", "spans": [[19, 36], [0, 3]]},  # by title
]


def _version(tenant, name, active):
    return factories.index_version(
        tenant, name=name, config_hash=uuid.uuid4().hex * 2, status="ready", is_active=active
    )


@pytest.fixture
def tiny(db):
    retrieval.count_cache.clear()
    tenant = tenant_create(slug="eval-tiny", name="Eval tiny")
    admin = membership_create(tenant=tenant, email="admin@tiny.io", role="admin", clearance="restricted")
    small, whole = _version(tenant, "small", True), _version(tenant, "whole", False)
    rng = np.random.default_rng(1)
    for title, source, text, cuts in (("Alpha", "docs/alpha.txt", A, [(0, 20), (22, 39)]),
                                      ("Beta notes", "docs/beta.txt", B, [(0, 17), (19, 36)])):
        document = factories.document(tenant, title=title, source=source, text=text, sha256="0" * 64,
                                      access_level=0, status="ready")
        sections = [
            factories.section(document, key=str(i), order=i, start=s, end=e, body_spans=[[s, e]], access_level=0)
            for i, (s, e) in enumerate(cuts)
        ]
        chunks = [(small, sections[i], i, s, e) for i, (s, e) in enumerate(cuts)]
        chunks.append((whole, sections[0], 0, 0, len(text) - 1))
        for version, section, ordinal, start, end in chunks:
            vector = rng.normal(size=384)
            factories.chunk(
                section, version, ordinal=ordinal, start=start, end=end, token_count=end - start,
                content_hash=uuid.uuid4().hex, embedding=(vector / np.linalg.norm(vector)),
            )
    return tenant, admin, small, whole


def _run(tmp_path, tenant, *versions, extra=()):
    golden = tmp_path / "golden.jsonl"
    golden.write_text("\n".join(json.dumps(q) for q in GOLDEN) + "\n")
    out = tmp_path / "eval.json"
    args = ["--tenant", tenant.slug, "--golden", str(golden), "--k", "1,2", "--mode", "keyword",
            "--json", str(out), *extra]
    for version in versions:
        args += ["--version", version]
    call_command("kb_eval", *args)
    return json.loads(out.read_text())


def test_numbers_equal_hand_computed_values(tiny, tmp_path, capsys):
    tenant, _, small, whole = tiny
    chart = tmp_path / "chart.png"
    data = _run(tmp_path, tenant, small.short_id, str(whole.id), extra=["--chart", str(chart)])
    by_name = {v["name"]: v for v in data["versions"]}
    approx = pytest.approx

    for name in ("small", "whole"):
        document = by_name[name]["document"]
        # Tenant-wide "zebra": the A chunk ranks first, so the B question misses at k=1 and hits at k=2.
        assert document["1"]["hit"]["mean"] == approx(2 / 3)
        assert document["2"]["hit"]["mean"] == approx(1.0)
        assert document["1"]["recall"]["mean"] == approx(2 / 3)

    # small: Q1 a1 [0,20) vs "Zebras" [0,6); Q2 b1 [0,17) vs [4,9); Q3 b2 [19,36) vs [19,36)+[0,3).
    for k in ("1", "2"):  # each restricted search matches one chunk, so k=1 and k=2 agree
        small_all = by_name["small"]["excerpt"][k]["all"]
        assert small_all["recall"]["mean"] == approx((1 + 1 + 17 / 20) / 3)
        assert small_all["precision"]["mean"] == approx((6 / 20 + 5 / 17 + 17 / 17) / 3)
        assert small_all["iou"]["mean"] == approx((6 / 20 + 5 / 17 + 17 / (17 + 3)) / 3)
    # whole: Q1 [0,39); Q2 [0,36); Q3 [0,36) holds both gold spans.
    whole_all = by_name["whole"]["excerpt"]["1"]["all"]
    assert whole_all["recall"]["mean"] == approx(1.0)
    assert whole_all["precision"]["mean"] == approx((6 / 39 + 5 / 36 + 20 / 36) / 3)
    assert whole_all["iou"]["mean"] == approx((6 / 39 + 5 / 36 + 20 / 36) / 3)
    # Per golden document name, as the question named it.
    assert by_name["small"]["excerpt"]["1"]["alpha.txt"]["precision"]["mean"] == approx(6 / 20)

    # Context recall at k=1: the hit's section. small: a1, b1, b2 -> Q3 misses "One" (3 of 20 chars).
    # whole: every hit is filed under the first section -> Q3's context is b1, which holds only "One".
    count = default_counter().count
    assert by_name["small"]["context"]["recall"]["mean"] == approx((1 + 1 + 17 / 20) / 3)
    assert by_name["whole"]["context"]["recall"]["mean"] == approx((1 + 1 + 3 / 20) / 3)
    expected_tokens = (count("Zebras zebras graze.") + count("One zebra sleeps.") + count("Owls watch stars.")) / 3
    assert by_name["small"]["context"]["tokens"]["mean"] == approx(expected_tokens)

    # Chunk size distributions come from the stored chunks (token_count = length here).
    assert by_name["small"]["chunks"]["count"] == 4 and by_name["whole"]["chunks"]["count"] == 2
    assert by_name["small"]["chunks"]["orphans"] == 4 and by_name["small"]["chunks"]["max_tokens"] == 20
    assert by_name["whole"]["chunks"]["mean_tokens"] == approx((39 + 36) / 2)

    table = capsys.readouterr().out
    assert f"small `{small.short_id}`" in table and "document hit@1 | 66.7 | 66.7" in table
    assert chart.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_default_version_is_the_active_one_and_k_beyond_the_search_page_is_refused(tiny, tmp_path):
    tenant, _, small, _ = tiny
    data = _run(tmp_path, tenant)
    assert [v["id"] for v in data["versions"]] == [str(small.id)]
    with pytest.raises(CommandError, match="every k must be from 1 to 100"):
        _run(tmp_path, tenant, extra=["--k", "5,500"])
    with pytest.raises(CommandError, match="no active member nobody@tiny.io"):
        _run(tmp_path, tenant, extra=["--as", "nobody@tiny.io"])


def test_chroma_csv_and_golden_resolution(tiny, tmp_path):
    tenant, *_ = tiny
    csv_path = tmp_path / "questions.csv"
    refs = json.dumps([{"content": "zebra", "start_index": 4, "end_index": 9}])
    with open(csv_path, "w", newline="") as fh:
        csv.writer(fh).writerows([["question", "references", "corpus_id"], ["which zebra?", refs, "beta"]])
    questions = load_questions(csv_path)
    resolved = golden_resolve(tenant=tenant, questions=questions)
    assert resolved[0].document_id == Document.objects.get(tenant=tenant, title="Beta notes").id
    assert resolved[0].spans == ((4, 9),)
    with pytest.raises(ApplicationError, match="matches no document"):
        golden_resolve(tenant=tenant, questions=[GoldenQuestion("q", "gamma")])
    with pytest.raises(ApplicationError, match="outside 'beta'"):
        golden_resolve(tenant=tenant, questions=[GoldenQuestion("q", "beta", ((30, 99),))])


@pytest.mark.django_db(transaction=True)
@pytest.mark.worker
def test_load_corpora_builds_versions_in_a_throwaway_tenant(tmp_path):
    corpora = tmp_path / "corpora"
    corpora.mkdir()
    (corpora / "rivers.md").write_text("The river Danube flows through Vienna.\n\n" * 3 + "Salmon swim upstream.\n")
    (corpora / "birds.md").write_text("# not a heading: plain text\nOwls hunt at night.\n\nSwifts sleep while flying.\n")
    golden = tmp_path / "golden.jsonl"
    golden.write_text(json.dumps({"question": "where do owls hunt", "document": "birds", "spans": [[28, 47]]}) + "\n")
    out = tmp_path / "eval.json"
    tenants_before = set(Document.objects.values_list("tenant_id", flat=True).distinct())
    call_command("kb_eval", "--load-corpora", str(corpora), "--golden", str(golden), "--k", "1,3", "--set",
                 "strategy=fixed", "--set", "target_tokens=32", "--set", "overlap=0", "--json", str(out))
    data = json.loads(out.read_text())
    assert len(data["versions"]) == 2
    assert data["versions"][1]["config"].startswith("fixed target=32")
    assert all(v["document"]["3"]["hit"]["mean"] == 1.0 for v in data["versions"])
    # Plain text despite .md: the first line is text, not a heading, so the span covers the same characters.
    assert all(v["excerpt"]["3"]["all"]["recall"]["mean"] == 1.0 for v in data["versions"])
    assert set(Document.objects.values_list("tenant_id", flat=True).distinct()) == tenants_before  # deleted
