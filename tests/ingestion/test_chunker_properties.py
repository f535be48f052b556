"""Property tests of the chunker's invariants over generated documents.

Documents are built directly as sections and blocks (headings, access regions
that return to their parent, prose with known sentences, code, list items whose
bullets lie outside the block, tables with a whole-table span), so the tests do
not depend on any parser; one test also goes through the Markdown parser.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ingestion.chunking import ChunkingConfig, chunk_document, default_counter
from ingestion.chunking.textables import is_delimiter_row
from ingestion.structure import Block, ParsedDocument, Section

COUNTER = default_counter()

WORDS = (
    "alpha beta gamma delta access policy refund billing tenant kernel naïve café "
    "Zürich 42 3.14 (note) x_y foo-bar über 東京 ümlaut self.value don't"
).split()
FIRST_WORDS = "The A Billing Every Some When Our Tenants".split()
# Text between two blocks of one section that no block owns; every one holds "-->"
# (which no generated word does), so a test can tell whether it was embedded.
NOISE = (
    "\n\n7\n00:00:01.000 --> 00:00:02.500\n",
    "\n\nNOTE -->\n\n12\n00:01:00.000 --> 00:01:04.000 align:start\n",
    "<-->",  # glued to both blocks: the cut points are not on whitespace
    " --> ",
)


@st.composite
def sentences(draw) -> str:
    kind = draw(st.sampled_from(["normal"] * 8 + ["long", "longword"]))
    if kind == "long":
        words = draw(st.lists(st.sampled_from(WORDS), min_size=60, max_size=160))
    elif kind == "longword":
        words = [draw(st.text(alphabet="abcdefghij", min_size=300, max_size=700))]
    else:
        words = draw(st.lists(st.sampled_from(WORDS), min_size=0, max_size=25))
    return " ".join([draw(st.sampled_from(FIRST_WORDS)), *words]) + draw(st.sampled_from([".", "!", "?"]))


class _Builder:
    def __init__(self) -> None:
        self.parts: list[str] = []
        self.pos = 0
        root = Section(key="0", parent=None, title="", heading_path=(), kind="document", depth=0, start=0, end=0)
        self.sections = [root]
        self.stack = [root]
        self.sentences: list[tuple[int, int]] = []  # known sentence spans of prose blocks

    def add(self, text: str) -> tuple[int, int]:
        start = self.pos
        self.parts.append(text)
        self.pos += len(text)
        return start, self.pos

    def open(self, kind: str, title: str, marker: str) -> Section:
        parent = self.stack[-1]
        start, _ = self.add(marker)
        path = parent.heading_path + ((title,) if kind == "heading" else ())
        section = Section(
            key=str(len(self.sections)),
            parent=parent.key,
            title=title,
            heading_path=path,
            kind=kind,
            depth=len(self.stack),
            start=start,
            end=start,
        )
        self.sections.append(section)
        self.stack.append(section)
        return section

    def close(self) -> None:
        section = self.stack.pop()
        section.end = self.pos
        if section.kind == "region":
            self.add("<!-- /access -->\n\n")


@st.composite
def documents(draw) -> tuple[ParsedDocument, list[tuple[int, int]]]:
    b = _Builder()
    for _ in range(draw(st.integers(1, 14))):
        item = draw(st.sampled_from(["prose"] * 5 + ["code", "list", "heading", "region", "close", "table", "cues"]))
        if item == "heading":
            level = draw(st.integers(1, len(b.stack)))
            while len(b.stack) > level:
                b.close()
            title = " ".join(
                draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=draw(st.sampled_from([4, 4, 60]))))
            )
            b.open("heading", title, "#" * level + " " + title + "\n\n")
        elif item == "region":
            b.open("region", "", "<!-- access: confidential -->\n\n")
        elif item == "close":
            if len(b.stack) > 1:
                b.close()
        elif item == "prose":
            sents = draw(st.lists(sentences(), min_size=1, max_size=6))
            start = b.pos
            spans = []
            for i, sent in enumerate(sents):
                s, e = b.add(sent)
                spans.append((s, e))
                if i < len(sents) - 1:
                    b.add(draw(st.sampled_from([" ", "  ", "\n"])))
            b.sentences += spans
            b.stack[-1].blocks.append(Block(start, b.pos, "prose"))
            b.add("\n\n")
        elif item == "code":
            lines = draw(
                st.lists(
                    st.sampled_from(["x = 1", "    return foo(bar)", "if a:", "# comment " * 30]),
                    min_size=1,
                    max_size=40,
                )
            )
            s, e = b.add("\n".join(lines))
            b.stack[-1].blocks.append(Block(s, e, "code"))
            b.add("\n\n")
        elif item == "cues":
            # Transcript-like: turn blocks of one section with text between them that
            # belongs to no block (cue numbers, timing lines, notes, glued markup).
            for _ in range(draw(st.integers(1, 6))):
                b.add(draw(st.sampled_from(NOISE)))
                s, e = b.add(" ".join(draw(st.lists(sentences(), min_size=1, max_size=3))))
                b.stack[-1].blocks.append(Block(s, e, "turn"))
            b.add("\n\n")
        elif item == "list":
            for _ in range(draw(st.integers(1, 4))):
                b.add("- ")
                s, e = b.add(draw(sentences()))
                b.sentences.append((s, e))
                b.stack[-1].blocks.append(Block(s, e, "list_item"))
                b.add("\n")
            b.add("\n")
        else:  # a table as its own child section with a whole-table span
            section = b.open("table", "", "")
            t_start, _ = b.add("| a | b |\n|---|---|\n")
            for _ in range(draw(st.integers(1, 5))):
                value = " ".join(draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=8)))
                s, e = b.add(f"| {value} | 1 |")
                section.blocks.append(Block(s, e, "table_row", embed_text=f"a: {value}; b: 1", joinable=False))
                b.add("\n")
            section.metadata["table"] = {"start": t_start, "end": b.pos - 1, "columns": ["a", "b"], "caption": ""}
            b.add("\n")
            b.close()
    while len(b.stack) > 1:
        b.close()
    text = "".join(b.parts)
    b.sections[0].end = len(text)
    return ParsedDocument(text=text, sections=b.sections), b.sentences


@st.composite
def configs(draw) -> ChunkingConfig:
    max_tokens = draw(st.sampled_from([64, 96, 256]))
    target = draw(st.integers(8, max_tokens - 18))
    return ChunkingConfig(
        target_tokens=target,
        max_tokens=max_tokens,
        overlap=draw(st.sampled_from([0.0, 0.125, 0.3])),
        prefix=draw(st.sampled_from(["heading_path", "heading_path", "none"])),
    )


def embedded_body(doc: ParsedDocument, chunk) -> str:
    """The body a chunk should embed: its span, or its blocks' parts when a gap between them holds text."""
    text = doc.text
    section = next(s for s in doc.sections if s.key == chunk.section_key)
    parts = [
        (max(b.start, chunk.start), min(b.end, chunk.end))
        for b in section.blocks
        if b.start < chunk.end and b.end > chunk.start
    ]
    gaps = [text[a_end:b_start] for (_, a_end), (b_start, _) in zip(parts, parts[1:], strict=False)]
    if chunk.kind == "table" or not any(g.strip() for g in gaps):
        return chunk.text
    # The chunker's pieces end on non-space (a generated code line may end in a space).
    return "\n".join(text[s:e].rstrip() for s, e in parts)


def check_invariants(doc: ParsedDocument, config: ChunkingConfig, chunks, known_sentences=()) -> None:
    text = doc.text
    by_key = {s.key: s for s in doc.sections}
    # 1. offsets slice back to the body; embed text ends with the body (or is a row's own text);
    #    nothing between the blocks is embedded unless it is whitespace.
    for c in chunks:
        assert text[c.start : c.end] == c.text
        assert c.text.rstrip() == c.text and c.text.strip()  # code keeps its indentation
        assert c.heading_path == tuple(by_key[c.section_key].heading_path)
        if c.kind == "table_rows" and config.table_row_labels:
            # rows written with their column labels (ChunkingConfig.table_row_labels): every cell is embedded but
            # the first label of a header line (the first line of a table's first group)
            for i, line in enumerate(c.text.split("\n")):
                cells = [line] if is_delimiter_row(line) else line.split("|")[(1 if i == 0 else 0) :]
                assert all(cell.strip() in c.embed_text for cell in cells if not is_delimiter_row(cell)), c
        elif c.kind not in ("table", "table_row"):
            assert c.embed_text.endswith(embedded_body(doc, c)), c
    # 2. the token count is the model's, and prefix + body fit the model input, always.
    real = COUNTER.count_batch([c.embed_text for c in chunks])
    for c, n in zip(chunks, real, strict=True):
        assert c.token_count == n, c
        assert n + config.special_tokens <= config.max_tokens
    # 3. no chunk crosses a section: nothing of another section inside its span.
    for c in chunks:
        own = by_key[c.section_key]
        assert own.start <= c.start and c.end <= own.end
        if c.kind == "table":
            continue
        own_blocks = [bl for bl in own.blocks if bl.start < c.end and bl.end > c.start]
        assert own_blocks, "a chunk lies in blocks of its section"
        assert own_blocks[0].start <= c.start and c.end <= own_blocks[-1].end
        for other in doc.sections:
            if other.key == c.section_key:
                continue
            assert not (c.start < other.start < c.end), f"section {other.key} starts inside a chunk of {own.key}"
            for bl in other.blocks:
                assert bl.end <= c.start or bl.start >= c.end, "a chunk covers another section's block"
    # 4. every non-whitespace character of every block is covered by a chunk of its section.
    for section in doc.sections:
        covered = bytearray(len(text))
        for c in chunks:
            if c.section_key == section.key:
                covered[c.start : c.end] = b"\x01" * (c.end - c.start)
        for bl in section.blocks:
            for pos in range(bl.start, bl.end):
                assert covered[pos] or text[pos].isspace(), f"char {pos} of section {section.key} not covered"
    # 5. cuts fall between sentences unless the sentence alone does not fit next to its prefix.
    for s_start, s_end in known_sentences:
        for c in chunks:
            for cut in (c.start, c.end):
                if s_start < cut < s_end:
                    body = embedded_body(doc, c)
                    used_prefix = c.embed_text[: len(c.embed_text) - len(body)]
                    budget = config.content_limit - COUNTER.count(used_prefix)
                    sentence_tokens = COUNTER.count(text[s_start:s_end])
                    assert sentence_tokens > budget, (
                        f"cut inside a sentence of {sentence_tokens} <= {budget} tokens: {text[s_start:s_end]!r} {c}"
                    )


SETTINGS = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)


@SETTINGS
@given(documents(), configs())
def test_invariants_on_generated_documents(generated, config):
    doc, known_sentences = generated
    chunks = chunk_document(doc, config, COUNTER)
    check_invariants(doc, config, chunks, known_sentences)


@SETTINGS
@given(documents())
def test_default_config_invariants_and_determinism(generated):
    doc, known_sentences = generated
    config = ChunkingConfig()
    first = chunk_document(doc, config, COUNTER)
    check_invariants(doc, config, first, known_sentences)
    assert chunk_document(doc, config, COUNTER) == first
    assert [c.ordinal for c in first] == list(range(len(first)))


@SETTINGS
@given(documents(), configs())
def test_text_between_blocks_is_never_embedded(generated, config):
    doc, _ = generated
    chunks = chunk_document(doc, config, COUNTER)
    assert not any("-->" in c.embed_text for c in chunks)
    noisy = [c for c in chunks if "-->" in c.text]
    # Such a chunk still spans its blocks contiguously; its embed text is the blocks' text.
    for c in noisy:
        assert c.embed_text.endswith(embedded_body(doc, c)) and embedded_body(doc, c) != c.text


class _CountOnly:
    """A counter with nothing but ``count()``: the chunker must still be exact."""

    def count(self, text: str) -> int:
        return COUNTER.count(text)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(documents(), configs())
def test_invariants_with_a_count_only_counter(generated, config):
    doc, known_sentences = generated
    chunks = chunk_document(doc, config, _CountOnly())
    check_invariants(doc, config, chunks, known_sentences)


@st.composite
def markdown_documents(draw) -> str:
    parts = []
    for _ in range(draw(st.integers(1, 10))):
        item = draw(st.sampled_from(["para", "para", "heading", "list", "region", "code"]))
        if item == "heading":
            parts.append("#" * draw(st.integers(1, 3)) + " " + draw(st.sampled_from(FIRST_WORDS)) + " title")
        elif item == "list":
            parts.append("\n".join("- " + draw(sentences()) for _ in range(draw(st.integers(1, 3)))))
        elif item == "region":
            parts.append("<!-- access: confidential -->\n\n" + draw(sentences()) + "\n\n<!-- /access -->")
        elif item == "code":
            parts.append("```\n" + "\n".join(["x = 1"] * draw(st.integers(1, 80))) + "\n```")
        else:
            parts.append(" ".join(draw(st.lists(sentences(), min_size=1, max_size=4))))
    return "\n\n".join(parts) + "\n"


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(markdown_documents(), configs())
def test_invariants_through_the_markdown_parser(source, config):
    parsers = pytest.importorskip("ingestion.parsers")
    try:
        doc = parsers.parse(source.encode("utf-8"), content_type="text/markdown")
    except parsers.registry.ParseError:  # pragma: no cover - parser rejects odd input
        return
    chunks = chunk_document(doc, config, COUNTER)
    check_invariants(doc, config, chunks)
