"""The upload preview is bounded: it never holds a web thread for a parse, nor builds what it does not show.

Found by the third attack on the demo (issue 23): a 36 KB PDF whose page tree names one page
object 4,999 times answered the preview after the two-minute parse limit while the other tenant's
previews waited on the same parse server; a 24 MB text took 96 s and 3 GB of the web process (its
35,027 chunks unpickled and token-counted there); the console previewed up to 20 such files one
after another. Now a preview is priced against the small-upload lane's budget, gets at most
``BULKHEAD_PREVIEW_SECONDS`` (the files of a request together), and counts tokens and chunks in the
budgeted child. No test here measures time: a deadline already passed stands for one that runs out.
"""

from __future__ import annotations

import time

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from accounts.services import api_token_create, membership_create, tenant_create
from bench.costly_documents import repeated_page_pdf
from kb.models import Document
from kb.services import Upload
from pipeline.preview import MAX_SECTIONS_SHOWN, PreviewTooCostly, UnreadableDocument, document_preview
from tests.api_helpers import console_client

pytestmark = pytest.mark.django_db


@pytest.fixture
def editor():
    tenant = tenant_create(slug="costly-co", name="Costly Co")
    return membership_create(tenant=tenant, email="editor@costly.test", role="editor", clearance="confidential")


def _pdf(data: bytes, name: str = "report.pdf") -> Upload:
    return Upload(content=data, title=name, source=name)


def test_a_pdf_over_the_previews_budget_is_too_costly_to_preview_and_says_what_to_do(editor):
    # 16 references to one page of 2,000 lines: 2.2 MB of page content, over the small lane's 2 MB.
    with pytest.raises(PreviewTooCostly) as refused:
        document_preview(member=editor, upload=_pdf(repeated_page_pdf(references=16)))
    message = refused.value.message
    assert message.startswith("too costly to preview: this PDF has 2,190,736 bytes of page content to interpret")
    assert "16 page references to 1 page object" in message and message.endswith("ingest it, or split it")
    assert refused.value.code == "too_costly_to_preview" and refused.value.status_code == 400


def test_the_attack_pdf_fails_its_preview_at_once_with_the_numbers_its_job_would_fail_with(editor):
    with pytest.raises(UnreadableDocument) as refused:
        document_preview(member=editor, upload=_pdf(repeated_page_pdf()))
    assert "684,468,079 bytes of page content" in refused.value.message
    assert "4,999 page references to 1 page object" in refused.value.message


def test_a_preview_whose_time_is_up_is_too_costly_and_parses_nothing(editor, monkeypatch):
    from ingestion import limits

    def no_child(*args, **kwargs):
        raise AssertionError("a child was started after the preview's time was up")

    monkeypatch.setattr(limits, "run_limited", no_child)
    upload = Upload(content=b"# Notes\n\nShort.\n", title="Notes", content_type="text/markdown")
    with pytest.raises(PreviewTooCostly, match=r"too costly to preview: it did not fit in the preview's 10 s"):
        document_preview(member=editor, upload=upload, deadline=time.monotonic())


def test_tokens_and_chunks_are_counted_in_the_child_never_in_the_web_process(editor, monkeypatch):
    # The web process neither tokenizes nor receives chunks: both are made in the budgeted child.
    import ingestion.chunking.tokens as tokens
    from ingestion import limits

    def refuse(*args, **kwargs):
        raise AssertionError("the preview tokenized or chunked in the web process")

    monkeypatch.setattr(tokens, "default_counter", refuse)
    monkeypatch.setattr(limits, "chunk_limited", refuse)
    text = "# Runbook\n\n" + "\n\n".join(f"Step {i}: page the on-call engineer and write it down." for i in range(200))
    preview = document_preview(member=editor, upload=Upload(content=text.encode(), title="Runbook",
                                                            content_type="text/markdown"))
    assert preview.chunks > 3 and preview.tokens > 2000
    assert preview.chunks == sum(s.chunks for s in preview.sections)


def test_a_preview_lists_at_most_its_share_of_sections_and_counts_them_all(editor):
    text = "".join(f"# Heading {i}\n\nText of section {i}.\n\n" for i in range(MAX_SECTIONS_SHOWN + 200))
    # Counts, not time: a deadline far off, so a loaded machine cannot turn this into a timing test.
    preview = document_preview(member=editor, upload=Upload(content=text.encode(), title="Many",
                                                            content_type="text/markdown"),
                               deadline=time.monotonic() + 300)
    assert len(preview.sections) == MAX_SECTIONS_SHOWN
    assert preview.section_count == MAX_SECTIONS_SHOWN + 201  # and the root
    assert preview.chunks > sum(s.chunks for s in preview.sections) and preview.sections_hidden == 201


def test_the_api_answers_too_costly_in_the_one_error_shape(editor):
    _, key = api_token_create(membership=editor, name="t")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    upload = SimpleUploadedFile("report.pdf", repeated_page_pdf(references=16))
    response = client.post("/api/v1/documents/preview/", {"file": upload}, format="multipart")
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert error["code"] == "too_costly_to_preview" and "ingest it, or split it" in error["message"]


def test_the_console_shares_one_budget_among_its_files_and_ingests_the_costly_ones_on_request(editor, settings):
    # No time left for any file: each says so, and "Ingest" stores them without a preview (their jobs are
    # held to the lanes' budgets, as an API upload's are).
    settings.BULKHEAD_PREVIEW_SECONDS = 0
    client = console_client(editor, raise_request_exception=False)

    def files():
        return [SimpleUploadedFile(f"note-{i}.md", b"# Note\n\nCall the desk.\n", content_type="text/markdown")
                for i in range(3)]

    form = {"access_level": "internal", "content_type": "text/plain"}
    response = client.post("/documents/upload/", {"files": files(), **form})
    page = response.content.decode()
    assert response.status_code == 200
    assert page.count("too costly to preview: it did not fit in the preview") == 3
    assert 'id="ingest-button"' in page
    digest = page.split('name="preview_digest" value="', 1)[1].split('"', 1)[0]
    response = client.post("/documents/upload/", {"files": files(), **form, "action": "ingest",
                                                  "preview_digest": digest})
    assert response.status_code == 200
    assert Document.objects.filter(tenant=editor.tenant).count() == 3
