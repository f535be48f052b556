"""Bad input through parse + chunk, end to end: a clear ParseError or sensible chunks, never a crash.

"Sensible" means the chunker's invariants: spans slice back to the text, every
chunk fits the model input, every non-whitespace character of every block is
covered by a chunk of its section.  Nothing here asserts on time (see STYLE.md:
benchmarks are scripts); a case that hangs would time the suite out instead.
Case times (``pytest --durations=0``) are in docs/benchmarks.md, "Bad input through parse
and chunk": the slowest, a 5 MB single line, took 3-6 s on a loaded 2-core machine; all the
others about 2 s or less.
"""

from __future__ import annotations

import random

import pytest

from ingestion.chunking import ChunkingConfig, chunk_document, default_counter
from ingestion.parsers import parse
from ingestion.structure import ParsedDocument, ParseError

COUNTER = default_counter()
CONFIG = ChunkingConfig()

# One name per parser family, so that each parser sees every kind of bad bytes.
FILENAMES = [
    "note.txt",
    "note.md",
    "page.html",
    "report.pdf",
    "letter.docx",
    "table.csv",
    "talk.vtt",
    "talk.srt",
    "module.py",
    "mail.eml",
    "archive.mbox",
    None,  # no name, no type: the bytes are sniffed
]
TEXT_FILENAMES = ["note.txt", "note.md", "page.html", "table.csv", "talk.vtt", "module.py", "mail.eml"]


def parse_and_chunk(data: bytes, *, filename: str | None = None, content_type: str | None = None):
    """Parse and chunk; returns (doc, chunks), or None when the parser refused the input with a ParseError."""
    try:
        doc = parse(data, filename=filename, content_type=content_type)
    except ParseError as exc:
        assert str(exc).strip(), "a ParseError says what is wrong"
        return None
    chunks = chunk_document(doc, CONFIG, COUNTER)
    assert_sensible(doc, chunks)
    return doc, chunks


def assert_sensible(doc: ParsedDocument, chunks, *, recount_every: int = 1) -> None:
    """The chunker's invariants on a real parse (token counts rechecked on every ``recount_every``-th chunk)."""
    text = doc.text
    sections = {s.key: s for s in doc.sections}
    for c in chunks:
        assert text[c.start : c.end] == c.text
        assert c.token_count + CONFIG.special_tokens <= CONFIG.max_tokens
        section = sections[c.section_key]
        assert section.start <= c.start and c.end <= section.end
    sample = chunks[::recount_every]
    for c, n in zip(sample, COUNTER.count_batch([c.embed_text for c in sample]), strict=True):
        assert c.token_count == n
    spans: dict[str, list[tuple[int, int]]] = {}
    for c in chunks:
        spans.setdefault(c.section_key, []).append((c.start, c.end))
    for section in doc.sections:
        union = _union(spans.get(section.key, []))
        for block in section.blocks:
            for gap_start, gap_end in _uncovered(block.start, block.end, union):
                assert not text[gap_start:gap_end].strip(), f"section {section.key}: text in no chunk"


def _union(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for start, end in sorted(ranges):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def _uncovered(start: int, end: int, union: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Parts of ``[start, end)`` outside the sorted, disjoint ``union``."""
    out = []
    pos = start
    for u_start, u_end in union:
        if u_end <= pos:
            continue
        if u_start >= end:
            break
        if u_start > pos:
            out.append((pos, u_start))
        pos = max(pos, u_end)
    if pos < end:
        out.append((pos, end))
    return out


# An empty file is an empty document (no chunks) where the format allows nothing at all, and a
# ParseError where the format needs something (a PDF's header, a zip, a WebVTT signature, a header).
EMPTY_REFUSED = {"report.pdf", "letter.docx", "talk.vtt", "mail.eml", "archive.mbox"}


@pytest.mark.parametrize("filename", FILENAMES)
def test_empty_file(filename):
    result = parse_and_chunk(b"", filename=filename)
    if filename in EMPTY_REFUSED:
        assert result is None, f"{filename}: an empty file is refused"
    else:
        assert result is not None, f"{filename}: an empty file is an empty document"
        assert result[1] == []


GARBAGE_MAGICS = (
    b"",
    b"%PDF-1.7\n",
    b"PK\x03\x04",
    b"WEBVTT\n\n",
    b"From: a@b.c\n\n",
    b"From x@y Mon Jan  1 00:00:00 2024\n",
)


@pytest.mark.parametrize("filename", FILENAMES)
@pytest.mark.parametrize("magic", GARBAGE_MAGICS, ids=lambda m: repr(m[:8]))
def test_binary_garbage(filename, magic):
    """Random bytes are refused by every parser, also behind the start of the format they claim
    to be (garbage that starts like it). The one exception: a message whose header is well formed
    and whose body is garbage is a message (its body is decoded the way a mail reader would)."""
    data = random.Random(7).randbytes(64 * 1024)
    result = parse_and_chunk(magic + data, filename=filename)
    if filename == "mail.eml" and magic == b"From: a@b.c\n\n":
        assert result is not None and result[1], "a well-formed header with a garbage body is chunked"
    else:
        assert result is None, f"{filename}: garbage after {magic!r} is refused"


@pytest.mark.parametrize("filename", TEXT_FILENAMES)
@pytest.mark.parametrize(
    "data",
    [
        b"# Title\n\nabc \xff\xfe def\n",
        b"\xc3\x28 truncated sequence",
        b"ok text then a lone continuation byte \x80\n",
        b"\xef\xbb\xbfBOM then \xed\xa0\x80 a surrogate\n",
    ],
    ids=["ff-fe", "truncated", "lone-continuation", "surrogate"],
)
def test_invalid_utf8_is_refused(filename, data):
    assert parse_and_chunk(data, filename=filename) is None, f"{filename}: invalid UTF-8 is refused"


def _five_megabyte_line() -> str:
    words = "alpha beta gamma delta tenant refund policy kernel Zürich 東京 x_y 3.14".split()
    rnd = random.Random(5)
    out: list[str] = []
    size = 0
    while size < 5_000_000:
        word = rnd.choice(words)
        out.append(word)
        size += len(word) + 1
    return " ".join(out)  # no sentence end anywhere: one 5 MB "sentence"


@pytest.mark.parametrize("filename", ["line.txt", "line.md"])
def test_a_five_megabyte_single_line(filename):
    line = _five_megabyte_line()
    doc = parse(line.encode("utf-8"), filename=filename)
    chunks = chunk_document(doc, CONFIG, COUNTER)
    assert len(chunks) > 1000
    assert_sensible(doc, chunks, recount_every=97)


@pytest.mark.parametrize(
    "source",
    [
        pytest.param("- " * 10_000 + "item\n", id="10000-nested-bullets"),
        pytest.param("1. " * 10_000 + "item\n", id="10000-nested-ordered"),
        pytest.param("> " * 10_000 + "quote\n", id="10000-nested-quotes"),
        pytest.param(">" * 10_000 + " quote\n", id="10000-quote-markers"),
        pytest.param("".join("  " * i + "- item\n" for i in range(1000)), id="1000-indented-levels"),
        pytest.param("<ul><li>" * 10_000 + "item", id="10000-html-lists-in-markdown"),
    ],
)
def test_deeply_nested_markdown(source):
    result = parse_and_chunk(source.encode("utf-8"), filename="nested.md")
    assert result is not None and result[1], "deep nesting is still text to index"


@pytest.mark.parametrize(
    ("filename", "source"),
    [
        ("headings.md", "".join(f"{'#' * (1 + i % 6)} Heading {i}\n" for i in range(10_000))),
        ("headings.md", "".join(f"{'#' * (1 + i % 6)} Heading {i}\nBody {i}.\n" for i in range(10_000))),
        ("headings.txt", "".join(f"= Heading {i} =\n" for i in range(10_000))),
        ("headings.txt", "".join(f"Heading {i}\n{'=' * 12}\n\nBody {i}.\n\n" for i in range(10_000))),
    ],
)
def test_a_heading_on_every_line(filename, source):
    result = parse_and_chunk(source.encode("utf-8"), filename=filename)
    assert result is not None
    doc, chunks = result
    assert len(doc.sections) > 1000
    # Headings alone are not body text: chunks only where a section has a body.
    if "Body" in source:
        assert len(chunks) == 10_000 and all(c.text.startswith("Body") for c in chunks)


@pytest.mark.parametrize(
    "source",
    ["<div>" * 10_000 + "x" + "</div>" * 10_000, "<ul><li>" * 10_000 + "x"],
    ids=["10000-divs", "10000-list-items"],
)
def test_deeply_nested_html_is_refused(source):
    with pytest.raises(ParseError) as caught:
        parse(source.encode("utf-8"), filename="deep.html")
    assert "nested too deeply" in str(caught.value)
