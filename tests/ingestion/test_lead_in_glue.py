"""``ChunkingConfig.lead_in_glue`` (issue 30, fifteenth session): a block that ends with a colon introduces the
next block, so the packer cuts between them only when no other block boundary will do -- a how-to's sentence
("You can install it with vcpkg:") stays in the chunk of its command. Off -- left out of the hash -- in configs
stored before."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ingestion.chunking import ChunkingConfig, chunk_document, default_counter
from ingestion.chunking.config import ADDED_OFF
from ingestion.parsers import parse

COUNTER = default_counter()
FILLER = " ".join(f"The build writes file number {i} into the output folder." for i in range(9))
TEXT = (
    f"{FILLER}\n\n"
    "Note that the default build type is release.\n\n"
    "You can build and install the library with the vcpkg dependency manager:\n\n"
    "    git clone https://example.org/vcpkg.git\n    cd vcpkg\n    ./vcpkg install thelib\n\n"
    f"{FILLER.replace('build', 'port')}\n"
)


def _chunks(text: str, **options):
    return chunk_document(parse(text.encode(), content_type="text/plain"), ChunkingConfig(**options), COUNTER)


def _holder(chunks, text: str, needle: str):
    start = text.index(needle)
    return [c for c in chunks if c.start <= start and start + len(needle) <= c.end]


def test_a_lead_in_stays_with_the_block_it_introduces():
    lead, command = "with the vcpkg dependency manager:", "./vcpkg install thelib"
    plain = _chunks(TEXT, target_tokens=150, lead_in_glue=False)
    # without the option the packer cuts right after the lead-in (the boundary nearest its goal)
    assert not any(c in _holder(plain, TEXT, command) for c in _holder(plain, TEXT, lead))
    glued = _chunks(TEXT, target_tokens=150, lead_in_glue=True)
    assert any(c in _holder(glued, TEXT, command) for c in _holder(glued, TEXT, lead))
    # the same text is covered, in order, within the target
    assert [c.text for c in glued] == [TEXT[c.start : c.end] for c in glued]
    assert all(c.token_count <= ChunkingConfig().content_limit for c in glued)


def test_off_in_configs_stored_before_and_out_of_the_hash():
    assert ADDED_OFF["lead_in_glue"] is False
    assert ChunkingConfig().lead_in_glue is False
    assert ChunkingConfig(lead_in_glue=False).config_hash() == ChunkingConfig().config_hash()
    assert ChunkingConfig(lead_in_glue=True).config_hash() != ChunkingConfig().config_hash()
    stored = {k: v for k, v in ChunkingConfig(lead_in_glue=True).as_dict().items() if k != "lead_in_glue"}
    assert ChunkingConfig.from_dict(stored).lead_in_glue is False


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(1, 12), st.booleans()),
        min_size=2,
        max_size=10,
    ),
    st.integers(40, 190),
)
def test_glue_only_moves_cuts_between_blocks(blocks, target):
    """Whatever the blocks, the chunks with and without the option cover the same text, keep the limit, and
    never cut inside a sentence that the plain packing keeps whole."""
    text = "\n\n".join(
        " ".join(f"Sentence {b} part {i} of the guide." for i in range(n)) + (" Run this:" if colon else "")
        for b, (n, colon) in enumerate(blocks)
    )
    plain = _chunks(text, target_tokens=target, lead_in_glue=False)
    glued = _chunks(text, target_tokens=target, lead_in_glue=True)
    for chunks in (plain, glued):
        covered = set()
        for c in chunks:
            covered.update(range(c.start, c.end))
            assert c.token_count <= ChunkingConfig().content_limit
        assert all(i in covered for i, ch in enumerate(text) if not ch.isspace())
    ends = {c.end for c in plain} | {c.start for c in plain}
    sentence_ends = {m for m in range(len(text)) if text[m - 1 : m] in (".", ":")} | {len(text)}
    assert all(c.end in sentence_ends for c in glued)
    assert ends  # the plain chunking produced boundaries to compare with
