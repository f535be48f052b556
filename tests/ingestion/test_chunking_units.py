"""Unit tests of the chunking building blocks: counter, config, sentences, packing, prefixes."""

from __future__ import annotations

import pytest

from ingestion.chunking import ChunkingConfig, build_embed_text, chunk_document, default_counter
from ingestion.chunking.packing import BLOCK, SENTENCE, pack
from ingestion.chunking.sentences import split_lines, split_sentences
from ingestion.chunking.tokens import TokenIndex
from ingestion.structure import Block, ParsedDocument, Section

COUNTER = default_counter()


def test_counter_is_not_truncated_at_128_and_excludes_special_tokens():
    text = "word " * 300
    assert COUNTER.count(text) == 300
    assert COUNTER.count("") == 0
    assert COUNTER.special_tokens == 2
    assert COUNTER.fits("word " * 254, 256) and not COUNTER.fits("word " * 255, 256)


@pytest.mark.parametrize(
    "text",
    ["Hello, wörld! 東京タワー x\x0cy a\u00a0b \u2028 [CLS] don't", "e.g. self.value=3.14;", "ab" * 200, ""],
)
def test_token_index_is_exact_at_whitespace(text):
    index = COUNTER.token_index(text)
    assert isinstance(index, TokenIndex) and index.exact
    assert index.count(0, len(text)) == COUNTER.count(text)


def test_config_validation_and_hash():
    default = ChunkingConfig()
    assert default.strategy == "structure" and default.prefix == "heading_path" and default.max_tokens == 256
    assert default.config_hash() == ChunkingConfig().config_hash()
    assert default.config_hash() != ChunkingConfig(target_tokens=100).config_hash()
    assert ChunkingConfig.from_dict(default.as_dict()) == default
    for bad in (
        {"strategy": "magic"},
        {"prefix": "title"},
        {"target_tokens": 0},
        {"target_tokens": 250},  # no room for a prefix within 256
        {"overlap": 1.0},
        {"overlap": -0.1},
        {"max_tokens": -1},
        {"semantic_split": True, "strategy": "fixed"},
        {"semantic_split": 1},
    ):
        with pytest.raises(ValueError):
            ChunkingConfig(**bad)
    with pytest.raises(ValueError):
        ChunkingConfig.from_dict({"target": 3})


def test_sentences_respect_abbreviations_initials_and_decimals():
    text = "Mr. Smith paid $3.50 to J. R. Tolkien. Then e.g. this happened! Did it? Yes. No. 5 is next."
    got = [text[s:e] for s, e in split_sentences(text)]
    assert got == [
        "Mr. Smith paid $3.50 to J. R. Tolkien.",
        "Then e.g. this happened!",
        "Did it?",
        "Yes.",
        "No. 5 is next.",
    ]


def test_sentence_spans_partition_non_space_text():
    text = "  One two.  Three four!\n Five "
    spans = split_sentences(text)
    assert [text[s:e] for s, e in spans] == ["One two.", "Three four!", "Five"]
    assert split_lines("a\n\n  b  \n") == [(0, 1), (3, 6)]


def test_pack_balances_instead_of_leaving_a_small_tail():
    # 10 sentences of 30 tokens, target 200: two chunks of 150, not 180 + 120.
    ranges = pack([30] * 10, [BLOCK] + [SENTENCE] * 9, target=200)
    assert ranges == [(0, 5), (5, 10)]


def test_pack_prefers_block_boundaries_and_overlaps_on_sentences():
    strengths = [BLOCK, SENTENCE, SENTENCE, BLOCK, SENTENCE, SENTENCE]
    assert pack([20] * 6, strengths, target=80) == [(0, 3), (3, 6)]
    overlapped = pack([20] * 6, strengths, target=80, overlap=20)
    assert overlapped[0] == (0, 3) and overlapped[1][0] == 2


def test_build_embed_text():
    assert build_embed_text(("Billing", "Refunds"), "", "Body.") == "Billing > Refunds\n\nBody."
    assert build_embed_text(("A",), "import os", "x") == "A\n\nimport os\n\nx"
    assert build_embed_text(("A",), "", "x", policy="none") == "x"


def _doc(text: str, sections: list[Section]) -> ParsedDocument:
    return ParsedDocument(text=text, sections=sections)


def test_small_sections_stay_small_and_parent_blocks_do_not_join_across_a_child():
    text = "Intro para.\n\n# Child\n\nChild text.\n\nBack in parent."
    root = Section(
        "0", None, "", (), "document", 0, 0, len(text), blocks=[Block(0, 11), Block(len(text) - 15, len(text))]
    )
    child_start = text.index("# Child")
    child = Section("1", "0", "Child", ("Child",), "heading", 1, child_start, len(text) - 17)
    child.blocks = [Block(text.index("Child text."), text.index("Child text.") + 11)]
    chunks = chunk_document(_doc(text, [root, child]), ChunkingConfig(), COUNTER)
    assert [(c.section_key, c.text) for c in chunks] == [
        ("0", "Intro para."),
        ("1", "Child text."),
        ("0", "Back in parent."),
    ]
    assert chunks[1].embed_text == "Child\n\nChild text."
    assert [c.ordinal for c in chunks] == [0, 1, 2]


def test_table_rows_and_whole_table():
    text = "| a | b |\n|---|---|\n| 1 | 2 |\n| 3 | 4 |"
    row1, row2 = text.index("| 1"), text.index("| 3")
    section = Section("0", None, "T", ("T",), "table", 0, 0, len(text))
    section.blocks = [
        Block(row1, row1 + 9, "table_row", embed_text="a: 1; b: 2", joinable=False),
        Block(row2, row2 + 9, "table_row", embed_text="a: 3; b: 4", joinable=False),
    ]
    section.metadata["table"] = {"start": 0, "end": len(text), "columns": ["a", "b"], "caption": "Numbers"}
    chunks = chunk_document(_doc(text, [section]), ChunkingConfig(), COUNTER)
    assert [c.kind for c in chunks] == ["table", "table_row", "table_row"]
    assert chunks[0].text == text and chunks[0].embed_text.startswith("T\n\nNumbers\n\n")
    assert chunks[1].embed_text == "T\n\na: 1; b: 2" and chunks[1].text == "| 1 | 2 |"
    assert all(c.token_count == COUNTER.count(c.embed_text) for c in chunks)


def test_content_hash_depends_on_model_and_embed_text():
    text = "Same body."
    section = Section("0", None, "", (), "document", 0, 0, len(text), blocks=[Block(0, len(text))])
    a = chunk_document(_doc(text, [section]), ChunkingConfig(), COUNTER)[0]
    b = chunk_document(_doc(text, [section]), ChunkingConfig(model="other/model"), COUNTER)[0]
    assert a.embed_text == b.embed_text and a.content_hash != b.content_hash


def test_token_index_survives_the_word_cache_filling_up(monkeypatch):
    # When the cache is cleared to make room, the words of this text that were
    # cached before must be counted again, not looked up.
    from ingestion.chunking import tokens

    counter = tokens.HFTokenCounter.from_model_dir(tokens.model_path())
    counter.token_index("alpha beta gamma")
    monkeypatch.setattr(tokens, "_WORD_CACHE_LIMIT", 4)
    text = "alpha beta delta epsilon"
    assert counter.token_index(text).count(0, len(text)) == COUNTER.count(text)


def test_token_index_from_several_threads_at_once_counts_as_one_thread_does(monkeypatch):
    """One counter (the process shares ``default_counter``) indexing texts from eight threads at once, its word cache
    so small that it fills and is cleared all the time: every index equals the one-thread answer and none fails.
    Before, a thread that found some of a text's words cached re-read them all after counting the others, and a
    clear by another thread in between was a KeyError."""
    import random
    import sys
    import threading

    from ingestion.chunking import tokens

    rng = random.Random(24)
    letters = "abcdefghijklmnopqrstuvwxyzäöü東京"
    vocabulary = ["".join(rng.choice(letters) for _ in range(rng.randint(1, 12))) + rng.choice(["", ",", ".", "'s"])
                  for _ in range(400)]
    texts = [" ".join(rng.choice(vocabulary) for _ in range(rng.randint(5, 60))) for _ in range(48)]
    expected = {text: COUNTER.token_index(text).cum for text in texts}
    assert all(cum[-1] == COUNTER.count(text) for text, cum in expected.items())

    counter = tokens.HFTokenCounter.from_model_dir(tokens.model_path())
    monkeypatch.setattr(tokens, "_WORD_CACHE_LIMIT", 64)
    start, wrong, failed = threading.Barrier(8), [], []

    def work(seed: int) -> None:
        order = random.Random(seed)
        start.wait()
        try:
            for _ in range(150):
                text = order.choice(texts)
                if counter.token_index(text).cum != expected[text]:
                    wrong.append(text)
        except Exception as exc:  # noqa: BLE001 -- reported below, with the thread's seed
            failed.append((seed, repr(exc)))

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as CPython will: more interleavings per run
    try:
        threads = [threading.Thread(target=work, args=(seed,)) for seed in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    assert (failed, wrong) == ([], []), (failed[:3], wrong[:3])
