"""Transcript parsers (WebVTT, SRT, plain ``Speaker: text``): real files (golden), windows, bad input.

Golden files are regenerated only with ``BULKHEAD_REGENERATE_GOLDEN=1`` (see golden_files.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ingestion.parsers import parse
from ingestion.parsers.transcripts import WINDOW_SECONDS, parse_plain_transcript, parse_srt, parse_webvtt
from ingestion.structure import ParseError
from tests.ingestion.doc_invariants import assert_well_formed
from tests.ingestion.golden_files import assert_matches_golden

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "transcripts"
REAL = ["comments.vtt", "non_padded_timestamps.vtt", "youtube_dl.vtt", "regions.vtt", "styles_with_comments.vtt",
        "sample.srt"]


@pytest.mark.parametrize("name", REAL)
def test_real_transcripts_match_golden_and_invariants(name):
    doc = parse((FIXTURES / name).read_bytes(), filename=name)
    assert_well_formed(doc)
    assert_matches_golden(doc, FIXTURES / name)
    for section in doc.sections[1:]:
        assert section.kind == "turn" and section.heading_path[0] == name
        for block in section.blocks:
            body = doc.text[block.start : block.end]
            assert "-->" not in body, "a block never holds a timing line"
            assert block.kind == "turn" and block.metadata["end"] >= block.metadata["start"]


def test_webvtt_notes_styles_and_identifiers_are_not_text():
    doc = parse_webvtt((FIXTURES / "comments.vtt").read_bytes(), filename="comments.vtt")
    bodies = [doc.text[b.start : b.end] for s in doc.sections for b in s.blocks]
    assert bodies == ["- Ta en kopp varmt te.\n- Det är inte varmt.", "- Har en kopp te.\n- Det smakar som te.",
                      "- Ta en kopp"]
    assert doc.title == "Translation of that film I like"
    assert [b.metadata["cue"] for b in doc.sections[1].blocks] == ["1", "2", "3"]


def test_voice_tags_name_the_speaker_and_stay_in_the_text():
    doc = parse_webvtt((FIXTURES / "non_padded_timestamps.vtt").read_bytes())
    blocks = doc.sections[1].blocks
    assert [b.metadata["speaker"] for b in blocks] == ["Jane Doe", "John Smith", "Jane Doe"]
    assert doc.text[blocks[0].start : blocks[0].end].startswith("<v Jane Doe>")
    assert blocks[2].metadata["start"] == pytest.approx(65.2)


def test_cues_without_blank_lines_between_them_are_split():
    doc = parse_webvtt((FIXTURES / "youtube_dl.vtt").read_bytes())
    starts = [b.metadata["start_time"] for b in doc.sections[1].blocks]
    assert "00:05:04.080" in starts


def _long_vtt(minutes: int) -> bytes:
    lines = ["WEBVTT", ""]
    for n in range(minutes * 6):  # a cue every 10 s; speakers alternate every 4 cues
        start = n * 10
        speaker = "Ana" if n // 4 % 2 == 0 else "Bo"
        lines += [f"{start // 3600:02d}:{start // 60 % 60:02d}:{start % 60:02d}.000 --> "
                  f"{(start + 9) // 3600:02d}:{(start + 9) // 60 % 60:02d}:{(start + 9) % 60:02d}.500",
                  f"<v {speaker}>Sentence number {n}.", ""]
    return "\n".join(lines).encode()


def test_cues_are_grouped_into_windows_cut_at_speaker_changes():
    doc = parse(_long_vtt(10), filename="meeting.vtt")
    assert_well_formed(doc)
    sections = doc.sections[1:]
    assert 3 <= len(sections) <= 6
    for section in sections:
        first, last = section.blocks[0].metadata, section.blocks[-1].metadata
        assert last["start"] - first["start"] < 2 * WINDOW_SECONDS
    for previous, section in zip(sections, sections[1:], strict=False):
        assert previous.blocks[-1].metadata["speaker"] != section.blocks[0].metadata["speaker"]
    assert sections[0].title == "00:00:00-" + sections[0].title.split("-")[1]
    assert sum(len(s.blocks) for s in sections) == 60


def test_srt_broken_timestamp_names_the_line():
    with pytest.raises(ParseError) as caught:
        parse_srt((FIXTURES / "invalid_timeframe.srt").read_bytes(), filename="invalid_timeframe.srt")
    assert caught.value.line == 6
    assert "00:00:11:890" in caught.value.message


@pytest.mark.parametrize("data, message", [
    (b"1\n00:00:01,000 --> 00:00:02,000\nok\n\n2\n00:00:05,000 --> 00:00:03,000\nbackwards\n", "ends before"),
    (b"1\n00:00:01,000 --> 00:00:02,000\nok\n\nsome text without timing\nmore\n", "timing line"),
    (b"x\n00:00:01,000 --> 00:00:02,000\nok\n", "subtitle number"),
    (b"1\n00:00:01,000 --> 00:61:02,000\nok\n", "broken timestamp"),
])
def test_srt_errors(data, message):
    with pytest.raises(ParseError, match=message):
        parse_srt(data)


def test_webvtt_needs_its_signature():
    with pytest.raises(ParseError, match="WEBVTT") as caught:
        parse_webvtt(b"00:00:01.000 --> 00:00:02.000\nhello\n")
    assert caught.value.line == 1


PLAIN = b"""Weekly sync, 3 March

Ana: Good morning. Shall we start with billing?
Bo: Yes. The refund queue is down to twelve.
It was forty last week.

Bo: One more thing on refunds.
[00:05:10] Ana: Thanks, next topic.
"""


def test_plain_transcript_turns_keep_labels_and_continuations():
    doc = parse(PLAIN, content_type="text/x-transcript", filename="sync.transcript")
    assert_well_formed(doc)
    blocks = [b for s in doc.sections for b in s.blocks]
    bodies = [doc.text[b.start : b.end] for b in blocks]
    assert bodies == ["Weekly sync, 3 March", "Ana: Good morning. Shall we start with billing?",
                      "Bo: Yes. The refund queue is down to twelve.\nIt was forty last week.",
                      "Bo: One more thing on refunds.", "[00:05:10] Ana: Thanks, next topic."]
    assert [b.metadata.get("speaker") for b in blocks[1:]] == ["Ana", "Bo", "Bo", "Ana"]
    assert blocks[-1].metadata["start"] == 310.0
    assert doc.sections[0].blocks[0].kind == "prose"


def test_plain_transcript_needs_turns_and_txt_stays_plain_text():
    with pytest.raises(ParseError, match="no 'Speaker: text' turns"):
        parse_plain_transcript(b"Just some notes.\nNothing said by anyone.\n")
    assert parse(PLAIN, filename="sync.txt").metadata.get("format") != "transcript"
