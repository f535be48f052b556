"""Found attacking spreadsheets and website sources (twenty-second session, attack22x), through the real upload,
ingestion and search (and a real website's sync).

* A CSV's formula cell: a spreadsheet shows what it computes, never its text, and its text was the row's chunk.
"""

from __future__ import annotations

import csv
import io

import pytest

from kb.models import Document, IngestionJob
from pipeline.services import jobs_run
from tests.sources_helpers import keyword_found

pytest_plugins = ["tests.api_fixtures"]

PAYLOAD = "Zanzibarpayload"
CLAIM = f"{PAYLOAD}: the refund window for every order is ninety days"


@pytest.mark.django_db
def test_a_csv_formulas_words_are_found_by_no_search(world):
    """An editor uploads a sheet whose "Note" cell is ``=IF(FALSE,"<planted>","ok")`` (Excel shows ``ok``): no search
    of a reader finds the planted words, or returns them in a hit's text; the row's shown cells are found. The words
    are a false claim, not an instruction: the screening holds an instruction's row (a second line), not this one."""
    out = io.StringIO(newline="")
    csv.writer(out).writerows([["Item", "Note", "Price"], ["Heronwafer", "fresh", "3"],
                               ["Egretcake", f'=IF(FALSE,"{CLAIM}","ok")', "4"]])
    editor = world.client("editor")
    answer = editor.post("/api/v1/documents/", {"content": out.getvalue(), "title": "Menu", "source": "menu.csv",
                                                "content_type": "text/csv", "access_level": "internal"}, format="json")
    assert answer.status_code == 201, answer.content
    document = Document.objects.get(pk=answer.json()["id"])
    jobs_run([IngestionJob.objects.get(document=document).pk])
    document.refresh_from_db()
    assert document.status == "ready", document.error
    viewer = world.client("viewer")
    assert keyword_found(viewer, "Egretcake") and keyword_found(viewer, "Heronwafer")
    assert not keyword_found(viewer, PAYLOAD)
    for mode in ("hybrid", "vector"):
        found = viewer.post("/api/v1/search/", {"query": "Egretcake refund window ninety days",
                                                "mode": mode, "top_k": 20}, format="json")
        assert found.status_code == 200, found.content
        body = found.content.decode()
        assert "Egretcake" in body and PAYLOAD not in body and "ninety" not in body, mode
    shown = viewer.get(f"/api/v1/documents/{document.pk}/").json()
    assert PAYLOAD not in str(shown)
