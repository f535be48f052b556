"""Transcripts: WebVTT, SRT and plain ``Speaker: text`` files.

The document text is the decoded file itself.  Each cue (or turn) is one block
of kind ``turn`` whose span covers only its spoken text lines -- never the cue
number or the ``00:01:02.000 --> 00:01:05.000`` timing line -- with the times in
``Block.metadata`` (``start``/``end`` in seconds, ``start_time``/``end_time`` as
written, ``speaker`` when one is named, ``cue`` for a cue identifier).  Speaker
labels (``<v Alba>``, ``[Alba]``, ``Alba:``) stay in the text.

Sections (kind ``turn``) are runs of consecutive cues: a new section starts once
the current one spans :data:`WINDOW_SECONDS`, at the next change of speaker (or at
the next cue when no speakers are named, and in any case after twice the window).
A section is titled by its time range, ``00:02:15-00:04:10``; its heading path
starts with the file name.  Plain transcripts without timestamps are grouped by
size instead (about :data:`TURN_GROUP_CHARS` characters, cut at a speaker change)
and titled ``Turns 1-24``.

A malformed timing line is a :class:`ParseError` naming the line: skipping the cue
would silently drop what was said, and a broken file is better fixed at the source.
NOTE, STYLE and REGION blocks of WebVTT, a cue's lines from one holding ``-->`` on (a player ends the cue there
and drops a timing line that does not parse with what follows it), and what else a player never shows (:mod:`webvtt_hidden`: tag
classes, cue text hidden by the STYLE blocks...), are cut from the document text once the structure is
built on the file as written.  So is what a terminal never shows (ANSI conceal, a colour its background's,
backspace overstrikes: :func:`~ingestion.parsers.visible_text.terminal_hidden`, as for plain text).

Formats: ``.vtt`` (text/vtt), ``.srt`` (application/x-subrip), and plain
transcripts as ``.transcript`` files or the content type ``text/x-transcript``
(``.txt`` stays with the plain-text parser: a text file with colons is not
necessarily a transcript).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from ingestion.parsers.access_markers import reject_unread_markers
from ingestion.parsers.css_visibility import MIN_OPACITY
from ingestion.parsers.registry import register
from ingestion.parsers.section_tree import LineIndex
from ingestion.parsers.text_decoding import decode_text
from ingestion.parsers.visible_text import merge_ranges, remove_ranges, shown_slice, terminal_hidden
from ingestion.parsers.webvtt_hidden import CueSpan, StyleBlock, hidden_cue_text
from ingestion.structure import Block, ParsedDocument, ParseError, Section

WINDOW_SECONDS = 120.0
TURN_GROUP_CHARS = 4000

# Hours optional; unpadded fields ("0:1:5.2", as some meeting tools write) are accepted.
_TIMESTAMP = r"(?:\d+:)?\d{1,2}:\d{1,2}(?:[.,]\d{1,3})?"
_TIMESTAMP_RE = re.compile(r"(?:(\d+):)?(\d{1,2}):(\d{1,2})(?:[.,](\d{1,3}))?")
_TIMING_RE = re.compile(rf"\s*({_TIMESTAMP})\s*-->\s*({_TIMESTAMP})(?:\s+.*)?\s*")
# SubRip markup: an ASS override block, or a <font> tag (group 1: its attributes).
_SRT_MARKUP_RE = re.compile(r"\{\\[^}]*\}|<font(\s[^>]*)>", re.IGNORECASE)
_SRT_ALPHA_HIDDEN = round(255 * (1 - MIN_OPACITY))  # 0xE6: an opacity under MIN_OPACITY
# An override block's tags that decide whether its text is drawn, in the block's order: an alpha (``\\alpha``, fill
# ``\\1a``, outline ``\\3a``), a reset (``\\r``), and (twenty-fifth session, attack25) the font size ``\\fs`` and its
# scales ``\\fscx``/``\\fscy`` (percent): ``{\\fs0}`` or ``{\\fscx0}`` draws the text at no size in mpv (libass), as a
# transparent one draws none.
_SRT_TAG_RE = re.compile(r"\\(?P<size>fscx|fscy|fs)(?P<amount>\d+(?:\.\d*)?)"
                         r"|\\(?P<name>alpha|1a|3a|r)(?:&?H?(?P<value>[0-9a-fA-F]{1,2})&?)?", re.IGNORECASE)
_SRT_MIN_FONT = 2  # script pixels (SubRip converted by FFmpeg: 288 high, its default font 16): a smudge under it
_SRT_MIN_SCALE = 10  # percent, as DOCX's w:w
# What a cue's text is drawn with until a block sets it: fill and outline alpha, font size, scales.
_SRT_DRAWN = {"1a": 0.0, "3a": 0.0, "fs": 16.0, "fscx": 100.0, "fscy": 100.0}


def _srt_unseen(state: dict[str, float]) -> bool:
    """Whether SubRip text drawn with ``state`` (:data:`_SRT_DRAWN`'s keys) shows nothing: fill and outline
    transparent, or a font size or scale of (nearly) nothing."""
    return (state["1a"] >= _SRT_ALPHA_HIDDEN and state["3a"] >= _SRT_ALPHA_HIDDEN) or state["fs"] < _SRT_MIN_FONT \
        or min(state["fscx"], state["fscy"]) < _SRT_MIN_SCALE
_VOICE_RE = re.compile(r"<v(?:\.[\w.-]+)?\s+([^>]+)>")
_BRACKET_SPEAKER_RE = re.compile(r"\[([^\]\d][^\]]{0,40})\]")
_COLON_SPEAKER_RE = re.compile(r"(?:>>\s*)?([^\W\d_][\w .'’-]{0,40}?)\s*:\s+\S")
_PLAIN_TURN_RE = re.compile(
    rf"\s*(?:\[?(?P<time>{_TIMESTAMP})\]?\s*[-–]?\s*)?(?P<speaker>[^\W\d_][\w .'’-]{{0,40}}?)\s*:\s+\S"
)


@dataclass
class _Cue:
    start: float | None
    end: float | None
    start_time: str | None
    end_time: str | None
    text_first: int  # 0-based first text line
    text_last: int
    opener: int  # 0-based first line of the cue (identifier or timing line)
    ident: str | None = None
    speaker: str | None = None
    metadata: dict = field(default_factory=dict)


def _seconds(stamp: str) -> float:
    match = _TIMESTAMP_RE.fullmatch(stamp)
    if match is None:  # pragma: no cover -- guarded by _TIMING_RE
        raise ValueError(stamp)
    hours, minutes, seconds, fraction = match.groups()
    if int(minutes) > 59 or int(seconds) > 59:
        raise ValueError(stamp)
    return int(hours or 0) * 3600 + int(minutes) * 60 + int(seconds) + (int(fraction.ljust(3, "0")) / 1000
                                                                        if fraction else 0.0)


def _clock(seconds: float) -> str:
    whole = int(seconds)
    return f"{whole // 3600:02d}:{whole % 3600 // 60:02d}:{whole % 60:02d}"


def _speaker(text: str) -> str | None:
    for pattern in (_VOICE_RE, _BRACKET_SPEAKER_RE):
        match = pattern.match(text.lstrip())
        if match:
            return " ".join(match.group(1).split())
    match = _COLON_SPEAKER_RE.match(text.lstrip())
    if match and len(match.group(1).split()) <= 4:
        return " ".join(match.group(1).split())
    return None


def _blocks_of_lines(lines: list[str], first: int) -> Iterator[list[int]]:
    """Runs of consecutive non-blank line numbers from ``first`` on, one per cue.

    A timing line inside a run also starts a new cue (unless it follows the cue's
    identifier): some generators (YouTube's) omit the blank line between cues.
    """
    run: list[int] = []
    for number in range(first, len(lines)):
        line = lines[number]
        if not line.strip():
            if run:
                yield run
                run = []
            continue
        if run and _TIMING_RE.fullmatch(line) and not (len(run) == 1 and "-->" not in lines[run[0]]):
            yield run
            run = []
        run.append(number)
    if run:
        yield run


def _timing(line: str, number: int) -> tuple[float, float, str, str]:
    match = _TIMING_RE.fullmatch(line)
    if match is None:
        raise ParseError(f"broken cue timing {line.strip()!r}: expected 'HH:MM:SS.mmm --> HH:MM:SS.mmm'",
                         line=number + 1)
    try:
        start, end = _seconds(match.group(1)), _seconds(match.group(2))
    except ValueError:
        raise ParseError(f"broken timestamp in cue timing {line.strip()!r}", line=number + 1) from None
    if end < start:
        raise ParseError(f"cue ends before it starts: {line.strip()!r}", line=number + 1)
    return start, end, match.group(1), match.group(2)


def _cues(lines: list[str], first: int, *, vtt: bool, other_blocks: list[list[int]] | None = None,
          discarded: list[list[int]] | None = None) -> list[_Cue]:
    """The cues from line ``first`` on; a WebVTT file's NOTE, STYLE and REGION blocks (their line numbers)
    are added to ``other_blocks``, and the cue text lines a player discards to ``discarded``: in WebVTT a line
    holding ``-->`` ends the cue's text (the WebVTT parser, "collect a WebVTT block"; Chromium's, Firefox's
    vtt.js) and is read as the next cue's timing line -- one that does not parse is dropped with the lines after
    it up to a blank line, never shown (twenty-first session, attack21: they were the cue's text)."""
    cues = []
    for run in _blocks_of_lines(lines, first):
        head = lines[run[0]].strip()
        if vtt and re.match(r"(NOTE|STYLE|REGION)(\s|$)", head):
            if other_blocks is not None:
                other_blocks.append(run)
            continue
        if "-->" in head:
            timing_at, ident = 0, None
        elif len(run) > 1 and "-->" in lines[run[1]]:
            timing_at, ident = 1, head
            if not vtt and not head.isdigit():
                raise ParseError(f"expected a subtitle number before the timing line, found {head!r}",
                                 line=run[0] + 1)
        else:
            raise ParseError(f"expected a cue timing line 'start --> end', found {head[:60]!r}", line=run[0] + 1)
        start, end, start_time, end_time = _timing(lines[run[timing_at]], run[timing_at])
        text_lines = run[timing_at + 1 :]
        arrow = next((k for k, n in enumerate(text_lines) if "-->" in lines[n]), None) if vtt else None
        if arrow is not None:
            if discarded is not None:
                discarded.append(text_lines[arrow:])
            text_lines = text_lines[:arrow]
        if not text_lines:
            continue  # an empty cue says nothing
        cue_text = "\n".join(lines[n] for n in text_lines)
        cues.append(_Cue(start, end, start_time, end_time, text_lines[0], text_lines[-1], run[0], ident,
                         _speaker(cue_text)))
    return cues


def _span(index: LineIndex, first: int, last: int) -> tuple[int, int]:
    start, end = index.start(first), index.end(last)
    text = index.text
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def _group(cues: list[_Cue], timed: bool) -> list[list[_Cue]]:
    """Consecutive cues grouped into sections (see the module docstring)."""
    groups: list[list[_Cue]] = []
    size = 0
    for cue in cues:
        if groups:
            current = groups[-1]
            speaker_changed = cue.speaker != current[-1].speaker or cue.speaker is None
            if timed and cue.start is not None and current[0].start is not None:
                elapsed = cue.start - current[0].start
                full = elapsed >= WINDOW_SECONDS and speaker_changed or elapsed >= 2 * WINDOW_SECONDS
            else:
                full = size >= TURN_GROUP_CHARS and speaker_changed or size >= 2 * TURN_GROUP_CHARS
            if not full:
                current.append(cue)
                size += cue.metadata.get("chars", 0)
                continue
        groups.append([cue])
        size = cue.metadata.get("chars", 0)
    return groups


def _document(text: str, index: LineIndex, cues: list[_Cue], *, filename: str, title: str | None, fmt: str,
              root_blocks: list[Block] | None = None) -> ParsedDocument:
    root = Section(key="0", parent=None, title=title or filename, heading_path=(), kind="document", depth=0,
                   start=0, end=len(text), blocks=root_blocks or [])
    sections = [root]
    timed = any(c.start is not None for c in cues)
    turn_number = 0
    for group in _group(cues, timed):
        blocks = []
        for cue in group:
            start, end = _span(index, cue.text_first, cue.text_last)
            meta = {k: v for k, v in (("start", cue.start), ("end", cue.end), ("start_time", cue.start_time),
                                      ("end_time", cue.end_time), ("cue", cue.ident), ("speaker", cue.speaker))
                    if v is not None}
            blocks.append(Block(start=start, end=end, kind="turn", metadata=meta))
        first_turn = turn_number + 1
        turn_number += len(group)
        if timed and group[0].start is not None:
            last_end = max((c.end for c in group if c.end is not None), default=group[0].start)
            heading = f"{_clock(group[0].start)}-{_clock(last_end)}"
            meta = {"start": group[0].start, "end": last_end}
        else:
            heading = f"Turns {first_turn}-{turn_number}" if len(group) > 1 else f"Turn {first_turn}"
            meta = {}
        speakers = list(dict.fromkeys(c.speaker for c in group if c.speaker))
        if speakers:
            meta["speakers"] = speakers
        section_start = index.start(group[0].opener)
        sections.append(Section(
            key=str(len(sections)), parent="0", title=heading,
            heading_path=(filename, heading) if filename else (heading,), kind="turn", depth=1,
            start=section_start, end=blocks[-1].end, blocks=blocks, line=group[0].opener + 1, metadata=meta,
        ))
    return ParsedDocument(text=text, sections=sections, title=title, metadata={"format": fmt})


def _lines(text: str) -> tuple[LineIndex, list[str]]:
    index = LineIndex(text)
    return index, [index.line(i) for i in range(index.count)]


def _name(filename: str | None) -> str:
    return os.path.basename(filename) if filename else ""


def _cue_lines_unshown(index: LineIndex, lines: list[str], cues: list[_Cue]) -> list[tuple[int, int]]:
    """The parts of the cues' opening lines a player never draws: the identifier line, and whatever follows the
    end time on the timing line (WebVTT's cue settings -- ``line:0 position:10%``, or any text: a player reads
    ``name:value`` words and ignores the rest). Cue settings never hide the cue text itself: see
    docs/security.md, "Hidden text" (the WebVTT rendering rules move a cue's box back inside the video)."""
    ranges = []
    for cue in cues:
        timing = cue.text_first - 1
        if cue.ident is not None and cue.opener < timing:
            ranges.append((index.start(cue.opener), index.end(cue.opener)))
        match = _TIMING_RE.fullmatch(lines[timing])
        if match is not None and lines[timing][match.end(2):].strip():
            ranges.append((index.start(timing) + match.end(2), index.end(timing)))
    return ranges


def _never_shown(index: LineIndex, cues: list[_Cue]) -> list[tuple[int, int]]:
    """The text of cues that end when they start: a player shows a cue while its start time <= the playback
    position < its end time (the HTML standard's "time marches on"; libass, under mpv, the same), never one of
    no duration (found attacking hidden text, 2026-12-03: ``00:00:03.000 --> 00:00:03.000`` reached the model).
    A cue of any duration, however short, is kept."""
    return [(index.start(cue.text_first), index.end(cue.text_last)) for cue in cues
            if cue.start is not None and cue.start == cue.end and cue.text_first <= cue.text_last]


def parse_webvtt_text(text: str, *, filename: str = "") -> ParsedDocument:
    """Parse decoded WebVTT (offsets index ``text``)."""
    index, lines = _lines(text)
    if not lines or not re.match(r"WEBVTT([ \t].*)?$", lines[0].strip()):
        raise ParseError("not a WebVTT file: the first line must be 'WEBVTT'", line=1)
    # The title as a terminal shows the line (twentieth session: a concealed run there stayed in the title).
    terminal = terminal_hidden(text)
    shown = shown_slice(text, merge_ranges(terminal), index.start(0), index.end(0)).strip()
    title = (shown[len("WEBVTT"):] if shown.startswith("WEBVTT") else "").strip(" \t-") or None
    header_end = 1
    while header_end < len(lines) and lines[header_end].strip():
        header_end += 1  # header metadata lines (Kind:, Language:) run up to the first blank line
    other_blocks: list[list[int]] = []
    discarded: list[list[int]] = []
    cues = _cues(lines, header_end, vtt=True, other_blocks=other_blocks, discarded=discarded)
    doc = _document(text, index, cues, filename=filename, title=title, fmt="vtt")
    # What a player never shows (webvtt_hidden): the header's metadata, NOTE/STYLE/REGION blocks, tag parts
    # it does not draw, cue text the STYLE blocks hide. Cut once the structure is built on the file as written.
    unshown = [(index.start(1), index.end(header_end - 1))] if header_end > 1 else []
    unshown += [(index.start(run[0]), index.end(run[-1])) for run in other_blocks + discarded]
    unshown += _cue_lines_unshown(index, lines, cues) + _never_shown(index, cues)
    styles = [StyleBlock(line=run[0], css="\n".join(lines[n] for n in run[1:])) for run in other_blocks
              if lines[run[0]].strip().startswith("STYLE")]
    hidden = hidden_cue_text(text, [CueSpan(cue.ident, cue.start, cue.end, index.start(cue.text_first),
                                            index.end(cue.text_last)) for cue in cues], styles, unshown)
    # Markers are checked on the file as uploaded (the registry sees only what is left): a marker in what is
    # cut still fails, with its line.
    reject_unread_markers(text)
    return remove_ranges(doc, hidden.ranges + terminal)


def _srt_unshown(text: str, index: LineIndex, cues: list[_Cue]) -> list[tuple[int, int]]:
    """What of SubRip cue text a player reads and never draws: an ASS override block (``{\\an8}``; mpv, through
    FFmpeg and libass, applies it, VLC drops it), the attributes of a ``<font>`` tag (``color="..."``), and the
    text that an override block makes transparent -- ``\\alpha``, or both the fill (``\\1a``) and the outline
    (``\\3a``), at an opacity under :data:`~ingestion.parsers.css_visibility.MIN_OPACITY` (``&HE6&`` or more),
    up to a block that sets it back (``\\r`` or a lower alpha) or the cue's end. A ``<font color>`` alone never
    hides: players draw SubRip with an outline over a frame of any colour, and FFmpeg's conversion keeps only the
    colour's RGB (docs/security.md, "Hidden text")."""
    ranges = []
    for cue in cues:
        start, end = index.start(cue.text_first), index.end(cue.text_last)
        body = text[start:end]
        state = dict(_SRT_DRAWN)
        position = 0
        for match in _SRT_MARKUP_RE.finditer(body):
            if _srt_unseen(state) and match.start() > position:
                ranges.append((start + position, start + match.start()))
            position = match.end()
            if match[0].startswith("<"):
                ranges.append((start + match.start(1), start + match.end(1)))
                continue
            ranges.append((start + match.start(), start + match.end()))
            for tag in _SRT_TAG_RE.finditer(match[0]):  # in the block's order: a \r resets what came before it
                name = (tag["size"] or tag["name"]).lower()
                if tag["size"]:
                    state[name] = float(tag["amount"])
                elif name == "r":
                    state.update(_SRT_DRAWN)
                elif tag["value"]:
                    for part in ("1a", "3a") if name == "alpha" else (name,):
                        state[part] = int(tag["value"], 16)
        if _srt_unseen(state) and position < len(body):
            ranges.append((start + position, end))
    return ranges


def parse_srt_text(text: str, *, filename: str = "") -> ParsedDocument:
    """Parse decoded SubRip (offsets index ``text``)."""
    index, lines = _lines(text)
    cues = _cues(lines, 0, vtt=False)
    doc = _document(text, index, cues, filename=filename, title=None, fmt="srt")
    unshown = sorted(_cue_lines_unshown(index, lines, cues) + _srt_unshown(text, index, cues)
                     + _never_shown(index, cues) + terminal_hidden(text))
    reject_unread_markers(text)  # on the file as uploaded: a marker in what is cut still fails
    return remove_ranges(doc, unshown)


def parse_plain_transcript_text(text: str, *, filename: str = "") -> ParsedDocument:
    """Parse ``Speaker: text`` lines (optionally ``[00:01:02] Speaker: text``); offsets index ``text``."""
    index, lines = _lines(text)
    cues: list[_Cue] = []
    root_blocks: list[Block] = []
    current: _Cue | None = None
    preamble: list[int] = []
    for number, line in enumerate(lines):
        if not line.strip():
            current = None
            continue
        match = _PLAIN_TURN_RE.match(line)
        if match and len(match.group("speaker").split()) <= 4:
            stamp = match.group("time")
            seconds = None
            if stamp:
                try:
                    seconds = _seconds(stamp)
                except ValueError:
                    raise ParseError(f"broken timestamp {stamp!r}", line=number + 1) from None
            current = _Cue(seconds, None, stamp, None, number, number, number,
                           speaker=" ".join(match.group("speaker").split()))
            cues.append(current)
        elif current is not None:
            current.text_last = number  # a continuation line of the turn
        elif cues:
            # A paragraph after a blank line, without a label: the previous speaker goes on.
            current = _Cue(None, None, None, None, number, number, number, speaker=cues[-1].speaker)
            cues.append(current)
        else:
            preamble.append(number)
    if not cues:
        raise ParseError("no 'Speaker: text' turns found; not a transcript", line=1)
    for cue in cues:
        start, end = _span(index, cue.text_first, cue.text_last)
        cue.metadata["chars"] = end - start
    # Timed turns end where the next one starts.
    for cue, following in zip(cues, cues[1:], strict=False):
        if cue.start is not None and following.start is not None:
            cue.end = following.start
    if preamble:
        start, end = _span(index, preamble[0], preamble[-1])
        root_blocks.append(Block(start=start, end=end, kind="prose"))
    doc = _document(text, index, cues, filename=filename, title=None, fmt="transcript", root_blocks=root_blocks)
    hidden = terminal_hidden(text)
    if hidden:
        reject_unread_markers(text)  # on the file as written: a marker a terminal hides still fails, with its line
    return remove_ranges(doc, hidden)


@register(content_types=["text/vtt"], extensions=[".vtt"])
def parse_webvtt(data: bytes, *, filename: str | None = None) -> ParsedDocument:
    """Parse a WebVTT caption file into time-window sections of cue blocks."""
    return parse_webvtt_text(decode_text(data), filename=_name(filename))


@register(content_types=["application/x-subrip", "text/srt", "text/x-srt"], extensions=[".srt"])
def parse_srt(data: bytes, *, filename: str | None = None) -> ParsedDocument:
    """Parse a SubRip subtitle file into time-window sections of cue blocks."""
    return parse_srt_text(decode_text(data), filename=_name(filename))


@register(content_types=["text/x-transcript"], extensions=[".transcript"])
def parse_plain_transcript(data: bytes, *, filename: str | None = None) -> ParsedDocument:
    """Parse a plain ``Speaker: text`` transcript into sections of turns."""
    return parse_plain_transcript_text(decode_text(data), filename=_name(filename))
