"""``ChunkingConfig.piece_weight`` (issue 30, "Pieces in the product"): validated, 0.5 by default since the
thirteenth round, and off -- left out of the hash -- in every config stored before, so each keeps its hash (and
its index version's id)."""

import math

import pytest

from ingestion.chunking.config import ADDED_OFF, HASH_STABLE_DEFAULTS, ChunkingConfig

# The thirteenth round's default (pieces at 0.5; the fourteenth added table_row_labels, here off), and the twelfth
# round's before it (the same config with pieces off: what every config stored before the option reads as).
DEFAULT_HASH = "65c18ffca265"
TWELFTH_HASH = "031cf0d7df70"
# The default with pieces at 0.4: a version of its own (pinned, so a change to how it hashes is seen).
PIECES_HASH = "8b6f21a3160e"


def test_pieces_are_on_by_default_and_every_stored_config_keeps_its_hash():
    assert ChunkingConfig().piece_weight == 0.5
    assert ADDED_OFF["piece_weight"] == 0.0 and HASH_STABLE_DEFAULTS["piece_weight"] == 0.0
    assert ChunkingConfig(table_row_labels=False).config_hash().startswith(DEFAULT_HASH)
    stored = {k: v for k, v in ChunkingConfig().as_dict().items() if k not in ("piece_weight", "table_row_labels")}
    # a config stored before the option has no key: it reads as off, and keeps the twelfth round's hash
    assert ChunkingConfig.from_dict(stored) == ChunkingConfig(piece_weight=0.0, table_row_labels=False)
    assert ChunkingConfig.from_dict(stored).config_hash().startswith(TWELFTH_HASH)
    assert ChunkingConfig(piece_weight=0).config_hash() == ChunkingConfig(piece_weight=0.0).config_hash()  # alike


def test_a_piece_weight_is_a_version_of_its_own():
    pieces = ChunkingConfig(piece_weight=0.4, table_row_labels=False)
    assert pieces.config_hash().startswith(PIECES_HASH)
    assert pieces.config_hash() != ChunkingConfig(piece_weight=0.0).config_hash() != ChunkingConfig().config_hash()
    assert ChunkingConfig.from_dict(pieces.as_dict()) == pieces


@pytest.mark.parametrize("weight", [-0.1, 1.0, 1, 2.5, True, False, "0.4", None, math.nan, math.inf])
def test_piece_weight_outside_zero_to_one_is_refused(weight):
    with pytest.raises(ValueError, match="piece_weight"):
        ChunkingConfig(piece_weight=weight)


@pytest.mark.parametrize("weight", [0, 0.0, 0.4, 0.999])
def test_piece_weight_inside_zero_to_one_is_taken(weight):
    assert ChunkingConfig(piece_weight=weight).piece_weight == weight
