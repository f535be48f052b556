"""kb.evaluation's upload path (the console's Evaluate): a golden file as kb_eval reads it, refused
with a clear message when malformed; golden documents resolve only among those the evaluating
member may read; a version of another tenant is not found."""

from __future__ import annotations

import json

import pytest

from accounts.errors import ApplicationError, NotFound
from accounts.policy import AccessLevel
from accounts.services import membership_create, tenant_create
from kb import evaluation
from kb.index_versions import index_version_active
from tests.api_helpers import make_document

pytestmark = pytest.mark.django_db

SECRET = [("root", None, "Vault", AccessLevel.RESTRICTED, [], "The vault code rotates weekly.")]
OPEN = [("root", None, "Lobby", AccessLevel.INTERNAL, [], "The lobby opens at eight every morning.")]


def _jsonl(*questions) -> bytes:
    return ("\n".join(json.dumps(q) for q in questions) + "\n").encode()


@pytest.fixture
def world():
    tenant = tenant_create(slug="eval-up", name="Eval upload")
    admin = membership_create(tenant=tenant, email="admin@eval.io", role="admin", clearance="restricted")
    low = membership_create(tenant=tenant, email="low@eval.io", role="admin", clearance="internal")
    make_document(tenant, title="vault.md", sections=SECRET, default=AccessLevel.RESTRICTED, source="vault.md")
    make_document(tenant, title="lobby.md", sections=OPEN, source="lobby.md")
    return {"tenant": tenant, "admin": admin, "low": low, "version": index_version_active(tenant=tenant)}


@pytest.mark.parametrize(("content", "filename", "message"), [
    (b'{"question": "q"}\n', "golden.jsonl", "golden.jsonl:1: malformed golden question"),
    (b"\n\n", "golden.jsonl", "golden.jsonl holds no questions"),
    (b"x", "golden.txt", "unknown golden-set format '.txt'"),
    (_jsonl(*[{"question": f"q{i}", "document": "lobby"} for i in range(evaluation.UPLOAD_MAX_QUESTIONS + 1)]),
     "big.jsonl", f"the console evaluates at most {evaluation.UPLOAD_MAX_QUESTIONS}"),
    (b" " * (evaluation.UPLOAD_MAX_BYTES + 1), "golden.jsonl", "the limit is"),
])
def test_a_bad_golden_file_is_refused_with_its_reason(content, filename, message):
    with pytest.raises(ApplicationError, match=message) as refused:
        evaluation.golden_parse(content=content, filename=filename)
    assert refused.value.code == "invalid_golden"
    assert "/tmp" not in refused.value.message  # the temporary copy's path is not shown


def test_golden_documents_resolve_only_among_those_the_member_may_read(world):
    golden = _jsonl({"question": "when does the vault code rotate", "document": "vault"})
    kwargs = {"versions": [world["version"]], "content": golden, "filename": "g.jsonl", "ks": (1,), "mode": "keyword"}
    reports = evaluation.version_evaluate(member=world["admin"], **kwargs)
    assert reports[0].doc_hit[1].mean == 1.0
    # A member below the document's level is told it matches nothing: not that it exists.
    with pytest.raises(ApplicationError, match="golden document 'vault' matches no document"):
        evaluation.version_evaluate(member=world["low"], **kwargs)
    lobby = _jsonl({"question": "when does the lobby open", "document": "lobby.md"})
    assert evaluation.version_evaluate(member=world["low"], **{**kwargs, "content": lobby})[0].doc_hit[1].mean == 1.0


def test_a_version_of_another_tenant_is_not_found(world):
    other = tenant_create(slug="eval-other", name="Other")
    outsider = membership_create(tenant=other, email="out@other.io", role="admin", clearance="restricted")
    with pytest.raises(NotFound):
        evaluation.version_evaluate(member=outsider, versions=[world["version"]],
                                    content=_jsonl({"question": "q", "document": "lobby"}), filename="g.jsonl")


def test_an_evaluation_is_audited_once_with_what_it_ran(world):
    # Found by the third attack on the demo: an admin's evaluation (thousands of searches: "is document D
    # in the top k for query Q") left no record at all.
    from audit.models import AuditEvent

    questions = [{"question": f"when does the lobby open {i}", "document": "lobby"} for i in range(3)]
    golden = _jsonl(*questions)
    evaluation.version_evaluate(member=world["admin"], versions=[world["version"]], content=golden,
                                filename="g.jsonl", ks=(5, 1, 5), mode="keyword")
    (event,) = AuditEvent.objects.filter(tenant_id=world["tenant"].pk, action="index_version.evaluate")
    assert event.membership_id == world["admin"].pk and event.target_id == str(world["version"].pk)
    assert event.details == {"golden_bytes": len(golden), "questions": 3, "versions": [str(world["version"].pk)],
                             "depths": [1, 5], "mode": "keyword", "context_budget": 1000, "searches": 6}
    from kb.models import Document

    lobby = Document.objects.get(tenant=world["tenant"], title="lobby.md")
    assert event.document_ids == [lobby.pk]
    assert not AuditEvent.objects.filter(tenant_id=world["tenant"].pk, action="search").exists()


def test_an_evaluation_over_its_search_budget_is_refused_before_any_search(world, monkeypatch):
    from audit.models import AuditEvent

    def no_search(**kwargs):
        raise AssertionError("a search ran")

    monkeypatch.setattr("kb.search.search", no_search)
    questions = [{"question": f"q{i}", "document": "lobby", "spans": [[0, 5]]} for i in range(evaluation.UPLOAD_MAX_QUESTIONS)]
    with pytest.raises(ApplicationError, match=r"would run 3,200 searches \(200 questions x 4 depths x 2 versions") as refused:
        evaluation.version_evaluate(member=world["admin"], versions=[world["version"], world["version"]],
                                    content=_jsonl(*questions), filename="g.jsonl", ks=(1, 2, 3, 4), mode="keyword")
    assert refused.value.code == "evaluation_too_long"
    assert not AuditEvent.objects.filter(action="index_version.evaluate").exists()


def test_an_evaluation_stops_when_its_time_is_up(world, settings):
    settings.BULKHEAD_EVALUATION_SECONDS = -1  # already over: stands for an evaluation that runs long
    with pytest.raises(ApplicationError, match="ran out of its time after 0 of 1 questions"):
        evaluation.version_evaluate(member=world["admin"], versions=[world["version"]], mode="keyword", ks=(1,),
                                    content=_jsonl({"question": "q", "document": "lobby"}), filename="g.jsonl")
