"""kb_eval --by-type: golden spans moved from a file's characters onto the text its parser kept
(``bench.evaluation.golden_on_stored_text``; issue 30, docs/benchmarks.md "The Markdown path")."""

from __future__ import annotations

import pytest

from accounts.services import tenant_create
from bench.evaluation import golden_on_stored_text
from ingestion.golden import GoldenQuestion
from ingestion.parsers import parse
from tests import factories

pytestmark = pytest.mark.django_db

RAW = "# Guide\n\n<!-- a note for editors -->\n\nInstall with pip.\n\n<!-- the secret word is plover -->\n\nThe end.\n"


def test_spans_follow_the_parsed_text_and_answers_in_left_out_text_are_dropped(tmp_path):
    tenant = tenant_create(slug="by-type", name="By type")
    stored = parse(RAW.encode(), content_type="text/markdown").text
    assert stored != RAW and "plover" not in stored  # the parser left the comments out
    factories.document(tenant, title="README.md", source="pkg/README.md", text=stored, content_type="text/markdown")
    factories.document(tenant, title="notes.txt", source="pkg/notes.txt", text="Plain words.\n")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "README.md").write_text(RAW, encoding="utf-8")
    (tmp_path / "pkg" / "notes.txt").write_text("Plain words.\n", encoding="utf-8")

    def at(text: str, quote: str) -> tuple[int, int]:
        return text.index(quote), text.index(quote) + len(quote)

    questions = [
        GoldenQuestion("How do I install it?", "pkg/README.md", (at(RAW, "Install with pip."),)),
        GoldenQuestion("What is the secret word?", "pkg/README.md", (at(RAW, "plover"),)),
        GoldenQuestion("How does it end?", "pkg/README.md", (at(RAW, "The end."),)),
        GoldenQuestion("Words?", "pkg/notes.txt", ((0, 5),)),
    ]
    moved, dropped = golden_on_stored_text(questions, directory=tmp_path, tenant=tenant)
    assert dropped == 1 and [q.question for q in moved] == ["How do I install it?", "How does it end?", "Words?"]
    for q, quote in zip(moved[:2], ("Install with pip.", "The end."), strict=True):
        (start, end), = q.spans
        assert stored[start:end] == quote
    assert moved[2].spans == ((0, 5),)  # a file its parser kept whole: unchanged
