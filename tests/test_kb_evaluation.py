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
