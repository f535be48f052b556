"""Documents are priced by the work they make a parser do, not by their bytes (ingestion/costs.py).

The third attack on the demo: a 36 KB PDF whose page tree names one page object 4,999 times
(that page: 2,000 lines) was 4,999 pages for pypdf to extract and held a small-upload worker for
the whole parse limit. Each test here stops pypdf's extraction with an error if it starts
where the price alone must decide, so no test waits for the work it prevents.
"""

from __future__ import annotations

import io
import zipfile

import pytest
from pypdf import PageObject

from bench.costly_documents import form_heavy_pdf, pdf, repeated_page_pdf
from ingestion import costs
from ingestion.parsers import parse
from ingestion.parsers.pdf_cost import price_pages
from tests.ingestion.limits_helpers import docx_with_body

SMALL = costs.Pricing(lane=costs.SMALL_LANE)


@pytest.fixture
def no_extraction(monkeypatch):
    """Fail the test if pypdf extracts a page's text."""
    def refuse(self, *args, **kwargs):
        raise AssertionError("a page was extracted: the price should have refused the document first")

    monkeypatch.setattr(PageObject, "extract_text", refuse)


def _priced(data: bytes, filename: str, pricing: costs.Pricing | None = None):
    pricing = pricing or costs.Pricing()
    with costs.pricing(pricing.document, pricing.lane):
        return parse(data, filename=filename)


def test_a_page_tree_naming_one_page_thousands_of_times_fails_with_its_numbers_before_any_extraction(no_extraction):
    data = repeated_page_pdf()
    assert len(data) < 40_000  # "small" by its bytes
    with pytest.raises(costs.TooCostly) as refused:
        _priced(data, "a.pdf")
    message = refused.value.message
    assert "684,468,079 bytes of page content" in message and "4,999 page references to 1 page object" in message
    assert "a document may have at most 25,165,824" in message


def test_a_form_drawn_thousands_of_times_costs_each_drawing(no_extraction):
    data = form_heavy_pdf(times=4000)  # one page, 2 KB: pypdf reads the form again at every "Do"
    assert len(data) < 4_000
    with pytest.raises(costs.TooCostly, match=r"1 page reference to 1 page object"):
        _priced(data, "a.pdf")
    # A handful of drawings is within a document's budget, not within the small lane's.
    with pytest.raises(costs.OverLaneBudget, match="the small-upload lane takes at most 2,097,152"):
        _priced(form_heavy_pdf(times=200), "a.pdf", SMALL)


def test_the_small_lane_takes_less_than_a_document_and_each_reference_counts(no_extraction):
    from pypdf import PdfReader

    # 16 references to one page of 2,000 lines: 2.2 MB of page content, a document may.
    reader = PdfReader(io.BytesIO(repeated_page_pdf(references=16)))
    with costs.pricing():
        assert price_pages(reader) == 16 * price_pages(PdfReader(io.BytesIO(repeated_page_pdf(references=1))))
    with pytest.raises(costs.OverLaneBudget, match="16 page references to 1 page object"):
        _priced(repeated_page_pdf(references=16), "a.pdf", SMALL)


def test_an_ordinary_pdf_is_read_on_the_small_lane():
    document = _priced(pdf(pages=3), "a.pdf", SMALL)
    assert "Page 3 line 10 of a page" in document.text


def test_extracted_text_is_capped_page_by_page(monkeypatch):
    calls = []
    original = PageObject.extract_text

    def counting(self, *args, **kwargs):
        calls.append(1)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(PageObject, "extract_text", counting)
    tight = costs.Pricing(document=costs.Budget(name="a document", input_bytes=None, pdf_content_bytes=10**9,
                                                docx_xml_bytes=10**9, text_chars=2_500, sections=1000))
    with pytest.raises(costs.TooCostly, match="characters of text in its first 2 pages"):
        _priced(pdf(pages=10, lines=20), "a.pdf", tight)
    assert len(calls) == 2  # it stopped where the text passed the cap, not at the end


def test_every_other_format_is_priced_by_its_bytes_its_text_and_its_sections():
    big = ("Plain words in a paragraph.\n\n" * 40_000).encode()  # 1.1 MB
    for name in ("a.txt", "a.md", "a.csv", "a.html", "a.eml", "a.py"):
        with pytest.raises(costs.OverLaneBudget, match=r"has 1,160,000 bytes; the small-upload lane takes at most"):
            _priced(big, name, SMALL)
    headings = "".join(f"# Heading {i}\n\n" for i in range(10_001)).encode()  # 150 KB, 10,002 sections
    with pytest.raises(costs.OverLaneBudget, match="10,002 sections; the small-upload lane takes at most 10,000"):
        _priced(headings, "a.md", SMALL)
    assert len(_priced(headings, "a.md").sections) == 10_002  # a document may


def test_a_docx_is_priced_by_its_xml_not_its_zipped_bytes():
    paragraphs = "".join(f"<w:p><w:r><w:t>Paragraph {i} {'x' * 60}</w:t></w:r></w:p>" for i in range(100_000))
    data = docx_with_body(paragraphs)
    xml = sum(m.file_size for m in zipfile.ZipFile(io.BytesIO(data)).infolist() if m.filename.endswith(".xml"))
    assert xml > costs.SMALL_LANE.docx_xml_bytes > 20 * len(data)
    with pytest.raises(costs.OverLaneBudget, match=r"this DOCX has [\d,]+ bytes of XML uncompressed; the small-upload"):
        _priced(data, "a.docx", SMALL)
