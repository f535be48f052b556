"""Plain-text parser: paragraphs, unambiguous headings, robustness."""

from __future__ import annotations

from pathlib import Path

import pytest

from ingestion.parsers.plaintext import parse_plaintext
from ingestion.structure import ParseError
from tests.ingestion.doc_invariants import assert_well_formed

CORPORA = Path(__file__).resolve().parents[2] / "evaluation" / "chroma-general" / "corpora"


def parse(text: str):
    doc = parse_plaintext(text.encode("utf-8"))
    assert_well_formed(doc)
    return doc


def outline(doc):
    return [(s.heading_path, s.depth) for s in doc.sections[1:]]


def block_texts(doc, section=None):
    sections = [section] if section else doc.sections
    return [doc.text[b.start : b.end] for s in sections for b in s.blocks]


def test_paragraphs_separated_by_blank_lines():
    doc = parse("First line\ncontinues here.\n\n\nSecond paragraph.\n")
    assert len(doc.sections) == 1
    assert block_texts(doc) == ["First line\ncontinues here.", "Second paragraph."]
    assert all(b.kind == "prose" for b in doc.root.blocks)


def test_one_paragraph_per_line_when_no_blank_lines():
    doc = parse("Alpha one.\nBeta two.\nGamma three.")
    assert block_texts(doc) == ["Alpha one.", "Beta two.", "Gamma three."]


def test_rst_headings_levels_by_first_appearance():
    doc = parse(
        "=====\nGuide\n=====\n\nIntro text.\n\nInstall\n-------\n\nRun it.\n\nDetails\n~~~~~~~\n\nMore.\n\n"
        "Usage\n-------\n\nUse it.\n"
    )
    assert outline(doc) == [
        (("Guide",), 1),
        (("Guide", "Install"), 2),
        (("Guide", "Install", "Details"), 3),
        (("Guide", "Usage"), 2),
    ]
    install = doc.sections[2]
    assert install.line == 7
    assert doc.text[install.start : install.end] == "Install\n-------\n\nRun it.\n\nDetails\n~~~~~~~\n\nMore."
    assert block_texts(doc, install) == ["Run it."]


def test_rst_underline_shorter_than_title_is_not_a_heading():
    doc = parse("\nA long title here\n---\n\nText.\n")
    assert len(doc.sections) == 1
    assert block_texts(doc) == ["A long title here\n---", "Text."]


def test_wiki_headings_both_forms():
    doc = parse(" = Article = \n Body one . \n = = Part = = \n Body two . \n == Other ==\n Body three .\n")
    assert outline(doc) == [(("Article",), 1), (("Article", "Part"), 2), (("Article", "Other"), 2)]
    assert block_texts(doc) == ["Body one .", "Body two .", "Body three ."]


def test_wiki_unbalanced_is_text():
    doc = parse("= Not a heading ==\n\nText\n")
    assert len(doc.sections) == 1


def test_numbered_clauses():
    doc = parse("Terms.\n\n4 Billing\n\nWe bill monthly.\n\n4.1 Refunds\n\nRefunds take a week.\n\n5 Support\n\nEmail us.\n")
    assert outline(doc) == [(("Billing",), 1), (("Billing", "Refunds"), 2), (("Support",), 1)]
    assert block_texts(doc, doc.sections[2]) == ["Refunds take a week."]


@pytest.mark.parametrize(
    "text",
    [
        "Shopping:\n\n1. Milk\n2. Eggs\n3. Bread\n",  # a list, not headings
        "1. Milk\n\n2. Eggs\n\n3. Bread\n",  # list items are each followed by the next item
        "Intro.\n\n4.2 Refunds are processed weekly.\n\nMore text.\n\n5 Items\n\nText.\n",  # final period
        "Intro.\n\n2 Refunds\n\nText.\n",  # only one candidate in the document
        "Intro\n4.2 Refunds\n\nText\n\n5 Support\n\nText\n",  # 4.2 not after a blank line, 5 alone
    ],
)
def test_numbered_clauses_conservative(text):
    assert len(parse(text).sections) == 1


def test_wikitexts_corpus_sections():
    doc = parse_plaintext((CORPORA / "wikitexts.md").read_bytes())
    assert_well_formed(doc)
    tops = [s.title for s in doc.sections if s.depth == 1]
    assert tops[:3] == ["Valkyria Chronicles III", "Tower Building of the Little Rock Arsenal", "Cicely Mary Barker"]
    paths = {s.heading_path for s in doc.sections}
    assert ("Valkyria Chronicles III", "Development", "Music") in paths
    assert ("Cicely Mary Barker", "Works", "Books", "Posthumously published") in paths
    for section in doc.sections:
        for block in section.blocks:
            assert "= =" not in doc.text[block.start : block.end]
            assert "\n" not in doc.text[block.start : block.end]  # one paragraph per line


def test_state_of_the_union_is_one_section_of_paragraphs():
    doc = parse_plaintext((CORPORA / "state_of_the_union.md").read_bytes())
    assert_well_formed(doc)
    assert len(doc.sections) == 1
    assert len(doc.root.blocks) > 300
    assert doc.text[doc.root.blocks[0].start : doc.root.blocks[0].end].startswith("Good evening.")


def test_bom_is_stripped_and_offsets_index_decoded_text():
    doc = parse_plaintext("\ufeffHello.\n\nWorld.".encode())
    assert doc.text == "Hello.\n\nWorld."
    assert block_texts(doc) == ["Hello.", "World."]


def test_crlf_line_endings():
    doc = parse("Title\r\n=====\r\n\r\nBody\r\nmore.\r\n")
    assert outline(doc) == [(("Title",), 1)]
    assert block_texts(doc) == ["Body\r\nmore."]


@pytest.mark.parametrize("text", ["", "   \n\n\t\n"])
def test_empty_document_has_no_blocks(text):
    doc = parse(text)
    assert len(doc.sections) == 1 and doc.root.blocks == []


def test_invalid_utf8_names_the_byte():
    with pytest.raises(ParseError, match="invalid UTF-8 at byte 6"):
        parse_plaintext(b"hello \xff world")


def test_binary_garbage_is_not_text():
    with pytest.raises(ParseError, match="not a text file"):
        parse_plaintext(bytes(range(256)) * 10)


def test_huge_single_line():
    doc = parse_plaintext(b"word " * 1_000_000)
    assert len(doc.root.blocks) == 1


def test_heading_on_every_line():
    text = "".join(f"= H{i} =\n" for i in range(10_000))
    doc = parse(text)
    assert len(doc.sections) == 10_001
    assert all(not s.blocks for s in doc.sections)
