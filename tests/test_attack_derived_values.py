"""Attacking values that are computed over a whole document or index and shown to members who may read
only part of it (the round after the screening score): what each says about text above its reader."""

from __future__ import annotations

import hashlib

import pytest

from accounts.policy import AccessLevel
from accounts.services import membership_create, tenant_create
from kb.models import Document
from tests.api_helpers import console_client, make_document

pytestmark = pytest.mark.django_db

MINUTES = [
    ("root", None, "", AccessLevel.INTERNAL, [], "Board minutes, third quarter."),
    ("shortlist", "root", "Shortlist", AccessLevel.INTERNAL, [], "Globex, Initech and Umbrella were considered."),
    ("decision", "root", "Decision", AccessLevel.RESTRICTED, [], "The board chose Initech."),
]


def _text(sections) -> str:
    return "".join((f"# {heading}\n" if heading else "") + body + "\n" for _, _, heading, _, _, body in sections)


def _stored_as_bytes(document: Document, text: str) -> None:
    """The document as an upload of ``text`` would leave it: its bytes and their SHA-256."""
    Document.objects.filter(pk=document.pk).update(raw=text.encode(), sha256=hashlib.sha256(text.encode()).hexdigest())


def _preview(editor, text: str) -> str:
    response = console_client(editor).post("/documents/upload/", {
        "text": text, "title": "guess", "content_type": "text/markdown", "access_level": "internal",
    })
    assert response.status_code == 200
    return response.content.decode()


def test_already_uploaded_names_only_a_document_whose_every_section_the_member_may_read():
    """Found attacking the upload page: "Already uploaded" looked the bytes' SHA-256 up among the documents the
    member can see -- those with one section they may read. An internal editor who sees the minutes' shortlist
    and the length of the hidden decision (decision #17) uploaded each guess of the whole file: the one naming
    the chosen company was "Already uploaded: these are the same bytes as Board minutes", the others were not
    -- the restricted decision confirmed word for word. Now only a document whose every section the member may
    read is named; any other is simply a new document, as a hidden one was."""
    tenant = tenant_create(slug="derived", name="Derived")
    editor = membership_create(tenant=tenant, email="editor@derived.test", role="editor", clearance="internal")
    minutes = make_document(tenant, title="Board minutes", sections=MINUTES)
    _stored_as_bytes(minutes, _text(MINUTES))
    guesses = {company: _text([*MINUTES[:2], (*MINUTES[2][:5], f"The board chose {company}.")])
               for company in ("Globex", "Initech", "Umbrella")}
    assert guesses["Initech"] == _text(MINUTES)
    answers = {company: "Already uploaded" in _preview(editor, text) for company, text in guesses.items()}
    assert answers == {"Globex": False, "Initech": False, "Umbrella": False}

    # A document whose every section the editor may read is still named: the page's purpose stays.
    open_minutes = [*MINUTES[:2], (*MINUTES[2][:3], AccessLevel.INTERNAL, [], "Nothing was decided.")]
    shown = make_document(tenant, title="Open minutes", sections=open_minutes)
    _stored_as_bytes(shown, _text(open_minutes))
    page = _preview(editor, _text(open_minutes))
    assert "Already uploaded" in page and "Open minutes" in page


def test_an_evaluations_chunk_figures_are_of_the_chunks_its_member_may_read():
    """Found attacking evaluation reports: the console's evaluation searches as the admin (an evaluation "never
    sees more than a search would"), yet its "chunks", "tokens mean / max" and "orphans" rows counted every chunk
    of the version -- documents the admin may not even know of included. An internal admin read the token count
    of a restricted chunk as the maximum, and every change of one as the mean moving. Now the figures are of the
    chunks the evaluating member may read."""
    from kb import evaluation
    from kb.index_versions import index_version_active
    from kb.models import Chunk

    tenant = tenant_create(slug="eval-figures", name="Eval figures")
    low = membership_create(tenant=tenant, email="low@figures.test", role="admin", clearance="internal")
    make_document(tenant, title="lobby.md", source="lobby.md",
                  sections=[("root", None, "Lobby", AccessLevel.INTERNAL, [], "The lobby opens at eight.")])
    vault = make_document(tenant, title="vault.md", source="vault.md", default=AccessLevel.RESTRICTED,
                          sections=[("root", None, "Vault", AccessLevel.RESTRICTED, [], "The vault code rotates.")])
    version = index_version_active(tenant=tenant)
    golden = b'{"question": "when does the lobby open", "document": "lobby.md"}\n'

    def figures() -> tuple:
        report = evaluation.version_evaluate(member=low, versions=[version], content=golden, filename="g.jsonl",
                                             ks=(1,), mode="keyword")[0]
        return report.chunks.count, report.chunks.max_tokens, report.chunks.mean_tokens, report.chunks.histogram

    before = figures()
    Chunk.objects.filter(document=vault).update(token_count=900)
    assert figures() == before
    assert before[:2] == (1, 5)  # the lobby's one chunk, "The lobby opens at eight."


def test_already_uploaded_names_no_document_whose_sections_are_not_known_yet():
    """Found attacking the fix above (2026-12-03): "every section the member may read" held of a document with no
    sections at all -- uploaded and waiting for its ingestion, failed, or replaced by new bytes whose sections are
    not stored yet -- while the policies of its parts are in its bytes (an inline ``<!-- access: restricted -->``)
    and known only once ingested. An internal editor's guess of the board's whole file, uploaded at the internal
    default, was "Already uploaded" while the file waited in the queue or after it failed. Now a document is named
    only once ingested (ready), every section of it readable."""
    from kb.services import Upload, document_create

    tenant = tenant_create(slug="derived-pending", name="Derived pending")
    editor = membership_create(tenant=tenant, email="editor@pending.test", role="editor", clearance="internal")
    board = "# Minutes\n\nShortlist: Globex, Initech and Umbrella.\n\n## Decision <!-- access: restricted -->\n\n" \
            "The board chose {}.\n"
    document, _ = document_create(tenant=tenant, created_by=None, upload=Upload(
        content=board.format("Initech").encode(), title="Board minutes", content_type="text/markdown",
        access_level="internal"))
    guesses = {company: board.format(company) for company in ("Globex", "Initech", "Umbrella")}

    def answers() -> dict:
        return {company: "Already uploaded" in _preview(editor, text) for company, text in guesses.items()}

    none = {"Globex": False, "Initech": False, "Umbrella": False}
    assert answers() == none  # queued: its ingestion has not run (no worker here)
    Document.objects.filter(pk=document.pk).update(status=Document.Status.FAILED, error="parse failed")
    assert answers() == none  # failed: no section was ever stored
