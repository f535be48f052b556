"""What a reader sees is what the model gets: invisible characters out, hidden ranges removed with spans kept.

Every parser's result passes through :func:`strip_invisible` (the registry wraps each
parser with it, after the check for unread access markers, so a marker with an invisible
character inside still fails). It removes from the document text, and from every string
derived from it (titles and title candidates, heading paths, table rows' embed text, context lines, metadata),
the characters that render as nothing but that a model reads:

* **tag characters** U+E0000-E007F (ASCII smuggled as invisible "tags"), always;
* **zero-width and invisible format characters** -- U+200B, U+2060, U+FEFF, U+00AD,
  U+180E, U+2061-2064, U+206A-206F, U+FFF9-FFFB, U+034F, the Hangul fillers, U+17B4/5,
  the musical format controls, and every other format (Cf) character but the few that
  render (the Arabic number signs, Egyptian and shorthand format controls);
* **U+200C/U+200D** (ZWNJ, ZWJ), except a single one between two non-ASCII, non-space
  characters (Persian and Indic spelling, emoji sequences): between ASCII letters they only
  split a word for a keyword filter ("ig\\u200dnore");
* **variation selectors**, except a single U+FE0E/U+FE0F after a non-ASCII character (or a
  keycap digit), a single ideographic variation selector after a CJK ideograph and a
  Mongolian one after a Mongolian letter: runs of them are the "emoji smuggling" channel;
* **bidi controls** (U+202A-202E, U+2066-2069, U+200E/200F, U+061C): removed, the text
  between them kept -- except an **override** (U+202D LRO, U+202E RLO) whose run would be
  shown in another order than it is stored (RLO over left-to-right letters or digits, LRO
  over right-to-left letters): the whole run is removed, since what a reader sees there is
  not what the text says;
* C0 and C1 control characters but tab, line feed, carriage return and form feed.

:func:`remove_ranges` is the shared machinery (also used for the hidden HTML of Markdown):
it deletes character ranges from a parsed document's text and maps every span onto the
shorter text, so that ``doc.text[block.start:block.end]`` still holds, and adds the number of
non-whitespace characters removed to the section that held them
(``Section.hidden_chars_removed``). For the formats whose document text is the decoded file
(Markdown, plain text, CSV, code, transcripts) the document text is therefore the file
*without* what was removed; the raw bytes keep everything.
"""

from __future__ import annotations

import bisect
import dataclasses
import re
import unicodedata
from collections.abc import Iterable, Sequence

from ingestion.structure import ParsedDocument, ParseError, Section

# -- classification --------------------------------------------------------------------------------

_LRE, _RLE, _PDF, _LRO, _RLO = "\u202a", "\u202b", "\u202c", "\u202d", "\u202e"
_LRI, _RLI, _FSI, _PDI = "\u2066", "\u2067", "\u2068", "\u2069"
_EMBEDDINGS = frozenset((_LRE, _RLE, _LRO, _RLO))
_ISOLATES = frozenset((_LRI, _RLI, _FSI))
_BIDI = frozenset((*_EMBEDDINGS, _PDF, *_ISOLATES, _PDI, "\u200e", "\u200f", "\u061c"))
_JOINERS = frozenset("\u200c\u200d")
# Format characters that render something (prepended concatenation marks and script-specific
# format controls): kept.
_VISIBLE_FORMAT = frozenset(
    chr(c) for c in (*range(0x0600, 0x0606), 0x06DD, 0x070F, 0x0890, 0x0891, 0x08E2, 0x110BD, 0x110CD,
                     *range(0x13430, 0x13456), *range(0x1BCA0, 0x1BCA4))
)
# Not format characters but rendering as nothing all the same.
_INVISIBLE_OTHER = frozenset("\u034f\u115f\u1160\u3164\uffa0\u17b4\u17b5") | frozenset(
    chr(c) for c in range(0x1D173, 0x1D17B)
)
_VARIATION = frozenset(chr(c) for c in (*range(0xFE00, 0xFE10), *range(0xE0100, 0xE01F0), 0x180B, 0x180C, 0x180D,
                                        0x180F))
_EMOJI_VS = frozenset("\ufe0e\ufe0f")
_PARAGRAPH_ENDS = frozenset("\n\r\u2029\x1c\x1d\x1e\x85")
# Control characters that lay text out (tab, line breaks, form feed); every other one is removed,
# the information separators U+001C-001F and U+0085 too, although Python counts them as spaces.
_KEPT_CONTROLS = frozenset("\t\n\r\x0c")

# Every character that may need a look: format characters, variation selectors, fillers, controls. Those
# of the first plane and those beyond are two patterns: a class of first-plane characters alone is
# matched through a bitmap, about three times faster.
_BMP_CANDIDATE_RE = re.compile(
    "[\x00-\x08\x0b\x0e-\x1f\x7f-\x9f\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f"
    "\u200b-\u200f\u202a-\u202e\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff9-\ufffb"
    "\u0600-\u0605\u06dd\u070f\u0890\u0891\u08e2]"
)
_ASTRAL_CANDIDATE_RE = re.compile(
    "[\U000110bd\U000110cd\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e01ef"
    "\U00013430-\U00013455]"
)


def _astral(text: str) -> bool:
    """Whether ``text`` has a character beyond the first plane (emoji, tags...)."""
    return not text.isascii() and len(text.encode("utf-16-le", "surrogatepass")) != 2 * len(text)


def _candidates(text: str) -> list[int]:
    found = [match.start() for match in _BMP_CANDIDATE_RE.finditer(text)]
    if _astral(text):
        found = sorted(found + [match.start() for match in _ASTRAL_CANDIDATE_RE.finditer(text)])
    return found


def _is_candidate(char: str) -> bool:
    return (_BMP_CANDIDATE_RE.match(char) or _ASTRAL_CANDIDATE_RE.match(char)) is not None


def _always_removed(char: str) -> bool:
    """Invisible in any context: tags, zero-width characters, fillers, other format characters, controls."""
    if char in _VISIBLE_FORMAT or char in _JOINERS or char in _VARIATION or char in _BIDI:
        return False
    if char in _INVISIBLE_OTHER:
        return True
    category = unicodedata.category(char)
    return category == "Cf" or (category == "Cc" and char not in _KEPT_CONTROLS)


def _joiner_kept(text: str, i: int) -> bool:
    """A single ZWJ/ZWNJ between two non-ASCII, non-space, visible characters."""
    if i == 0 or i + 1 >= len(text):
        return False
    before, after = text[i - 1], text[i + 1]
    return all(
        ord(c) > 0x7F and not c.isspace() and not _is_candidate(c) for c in (before, after)
    ) or (before in _EMOJI_VS and ord(after) > 0x7F and not after.isspace() and not _is_candidate(after)
          and i >= 2 and not _is_candidate(text[i - 2]))


def _variation_kept(text: str, i: int) -> bool:
    """A single variation selector right after the kind of character it legitimately follows."""
    if i == 0:
        return False
    char, base = text[i], text[i - 1]
    if _is_candidate(base) or base.isspace():
        return False  # a run of selectors, or one after nothing visible
    if char in _EMOJI_VS:
        if ord(base) > 0x7F:
            return True
        return base in "0123456789#*" and text[i + 1 : i + 2] == "\u20e3"  # keycap "1\ufe0f\u20e3"
    if 0xE0100 <= ord(char) <= 0xE01EF:
        return unicodedata.name(base, "").startswith(("CJK UNIFIED IDEOGRAPH", "CJK COMPATIBILITY IDEOGRAPH"))
    if char in "\u180b\u180c\u180d\u180f":
        return 0x1800 <= ord(base) <= 0x18AF
    return False


def _override_end(text: str, i: int) -> int:
    """End (exclusive, past its closing PDF when there is one) of the override run opened at ``i``."""
    depth = 0  # embeddings/overrides opened inside the run
    isolates = 0
    j = i + 1
    while j < len(text):
        char = text[j]
        if char in _PARAGRAPH_ENDS:
            return j
        if char in _EMBEDDINGS:
            depth += 1
        elif char in _ISOLATES:
            isolates += 1
        elif char == _PDI:
            if not isolates:
                return j  # closes an isolate the run sits in: the run ends there too
            isolates -= 1
        elif char == _PDF and not isolates:
            if not depth:
                return j + 1
            depth -= 1
        j += 1
    return j


def _reorders(run: str, override: str) -> bool:
    """Whether a reader sees ``run`` (an override's content) in another order than it is stored."""
    reversed_classes = ("L", "EN", "AN") if override == _RLO else ("R", "AL")
    return any(unicodedata.bidirectional(char) in reversed_classes for char in run if not _is_candidate(char))


def shown_reordered(text: str, *, rtl: bool) -> bool:
    """Whether a reader sees ``text`` in another order than it is stored when a bidi override draws it right to left
    (``rtl``: Latin letters and digits reversed) or left to right (Hebrew and Arabic letters reversed): the rule of
    U+202E/U+202D above, for a format that writes its overrides as markup (a DOCX ``w:bdo``)."""
    return _reorders(text, _RLO if rtl else _LRO)


def unseen_character(text: str) -> str | None:
    """The first character of a one-line name (a title, a path, a tag) that a reader does not see as text and a
    model reads: a control character but a tab or a line break, else the first of :func:`invisible_ranges`; None
    when there is none. For names given beside a content (typed at upload, a source's path), which no parser
    cleans."""
    import unicodedata

    found = next((c for c in text if unicodedata.category(c) == "Cc" and c not in "\t\n\r"), None)
    if found is None and (ranges := invisible_ranges(text)):
        found = text[ranges[0][0]]
    return found


def invisible_ranges(text: str) -> list[tuple[int, int]]:
    """Sorted, disjoint ``(start, end)`` ranges of ``text`` that render as nothing (see the module docstring)."""
    ranges: list[tuple[int, int]] = []
    skip_to = 0
    for i in _candidates(text):
        if i < skip_to:
            continue
        char = text[i]
        if char in (_LRO, _RLO):
            end = _override_end(text, i)
            if _reorders(text[i + 1 : end], char):
                ranges.append((i, end))
                skip_to = end
                continue
            ranges.append((i, i + 1))
        elif char in _BIDI or _always_removed(char):
            ranges.append((i, i + 1))
        elif char in _JOINERS:
            if not _joiner_kept(text, i):
                ranges.append((i, i + 1))
        elif char in _VARIATION:
            if not _variation_kept(text, i):
                ranges.append((i, i + 1))
    return merge_ranges(ranges)


def clean_string(text: str) -> str:
    """``text`` without its invisible characters (titles, cells, metadata: strings with no spans)."""
    if not text or (_BMP_CANDIDATE_RE.search(text) is None
                    and (not _astral(text) or _ASTRAL_CANDIDATE_RE.search(text) is None)):
        return text
    return _cut(text, invisible_ranges(text))


def counted(text: str) -> int:
    """How much a removed piece of text counts: its non-whitespace characters."""
    return sum(1 for char in text if not char.isspace())


# -- removal with spans kept ------------------------------------------------------------------------


def merge_ranges(ranges: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """Sorted, disjoint, non-empty ranges covering the same characters."""
    merged: list[tuple[int, int]] = []
    for start, end in sorted(r for r in ranges if r[1] > r[0]):
        if merged and start <= merged[-1][1]:
            if end > merged[-1][1]:
                merged[-1] = (merged[-1][0], end)
        else:
            merged.append((start, end))
    return merged


def _cut(text: str, ranges: Sequence[tuple[int, int]]) -> str:
    pieces = []
    position = 0
    for start, end in ranges:
        pieces.append(text[position:start])
        position = end
    pieces.append(text[position:])
    return "".join(pieces)


def cut_ranges(text: str, ranges: Iterable[tuple[int, int]]) -> str:
    """``text`` without the characters of ``ranges`` (any order; overlaps merged)."""
    return _cut(text, merge_ranges(ranges))


class OffsetMap:
    """Where an offset of the old text lands once ``ranges`` are cut out of it."""

    def __init__(self, ranges: Sequence[tuple[int, int]]) -> None:
        self.starts = [start for start, _ in ranges]
        self.ends = [end for _, end in ranges]
        self.removed_before = [0]
        for start, end in ranges:
            self.removed_before.append(self.removed_before[-1] + end - start)

    def __call__(self, offset: int) -> int:
        index = bisect.bisect_right(self.starts, offset)
        if index and offset < self.ends[index - 1]:
            return self.starts[index - 1] - self.removed_before[index - 1]
        return offset - self.removed_before[index]


def _innermost_sections(sections: Sequence[Section], positions: Sequence[int]) -> list[Section]:
    """For each of the sorted ``positions``, the deepest section whose span holds it (the root at worst).

    Sections are in document order and nest: of those that start at or before a position, the
    last one (in that order) that still holds it is the deepest; one that no longer holds a
    position holds no later one either.
    """
    found: list[Section] = []
    stack: list[Section] = [sections[0]]
    following = 1
    for position in positions:
        while following < len(sections) and sections[following].start <= position:
            stack.append(sections[following])
            following += 1
        while len(stack) > 1 and not (stack[-1].start <= position < stack[-1].end):
            stack.pop()
        found.append(stack[-1])
    return found


def shown_slice(text: str, ranges: Sequence[tuple[int, int]], start: int, end: int) -> str:
    """``text[start:end]`` without ``ranges`` (sorted and not overlapping, as :func:`merge_ranges` gives them): what
    a reader is shown of that stretch once they are cut."""
    if not ranges:
        return text[start:end]
    parts, at = [], start
    for low, high in ranges[max(0, bisect.bisect_right(ranges, (start, start)) - 1):]:
        if low >= end:
            break
        if high > at:
            parts.append(text[at:max(at, low)])
            at = max(at, high)
    parts.append(text[at:end] if at < end else "")
    return "".join(parts)


def remove_ranges(doc: ParsedDocument, ranges: Iterable[tuple[int, int]]) -> ParsedDocument:
    """``doc`` with ``ranges`` of its text cut out, every span mapped onto the new text (in place).

    Blocks that become blank are dropped, the others trimmed of whitespace at their edges;
    a table's ``metadata["table"]`` span follows. Each range's non-whitespace characters
    are added to ``hidden_chars_removed`` of the deepest section that held it.
    """
    ranges = merge_ranges(ranges)
    if not ranges:
        return doc
    old = doc.text
    text = _cut(old, ranges)
    new = OffsetMap(ranges)
    for section, (start, end) in zip(_innermost_sections(doc.sections, [r[0] for r in ranges]), ranges,
                                     strict=True):
        section.hidden_chars_removed += counted(old[start:end])
    for section in doc.sections:
        section.start, section.end = new(section.start), new(section.end)
        blocks = []
        for block in section.blocks:
            start, end = new(block.start), new(block.end)
            while start < end and text[start].isspace():
                start += 1
            while end > start and text[end - 1].isspace():
                end -= 1
            if start < end:
                blocks.append(dataclasses.replace(block, start=start, end=end))
        section.blocks = blocks
        table = section.metadata.get("table")
        if isinstance(table, dict) and "start" in table and "end" in table:
            section.metadata["table"] = {**table, "start": new(int(table["start"])), "end": new(int(table["end"]))}
    doc.text = text
    return doc


def _clean_value(value: object) -> object:
    """``value`` with its strings cleaned, nested in lists, tuples and dicts: the same object when unchanged."""
    if isinstance(value, str):
        return clean_string(value)
    if isinstance(value, (list, tuple)):
        items = [_clean_value(item) for item in value]
        if all(new is old for new, old in zip(items, value, strict=True)):
            return value
        return items if isinstance(value, list) else tuple(items)
    if isinstance(value, dict):
        cleaned = {key: _clean_value(item) for key, item in value.items()}
        return value if all(cleaned[key] is item for key, item in value.items()) else cleaned
    return value


# A control string (found attacking hidden text, 2026-12-04: only its ESC was removed, its payload reached the model):
# an OSC (ESC ] or C1 U+009D: a window title, a hyperlink's address, a clipboard write), a DCS (ESC P, U+0090), SOS
# (ESC X, U+0098), PM (ESC ^, U+009E) or APC (ESC _, U+009F) runs up to its string terminator (ESC \ or U+009C; BEL
# ends an OSC too, as xterm reads it). As in the DEC parser's state machine, CAN and SUB cancel it and any other ESC
# or C1 control ends it and starts a sequence of its own (so a CSI after it is read as one); one left open runs to
# the text's end. A terminal draws none of it.
_CONTROL_RE = re.compile(
    r"(?:\x1b\]|\x9d)[^\x07\x1b\x18\x1a\x80-\x9f]*(?:\x07|\x1b\\|[\x9c\x18\x1a])?"
    r"|(?:\x1b[PX^_]|[\x90\x98\x9e\x9f])[^\x1b\x18\x1a\x80-\x9f]*(?:\x1b\\|[\x9c\x18\x1a])?"
    r"|(?:\x1b\[|\x9b)(?P<params>[0-9;:?<=>]*)(?P<middle>[ -/]*)(?P<final>[@-~])"
    r"|\x1b(?P<intermediate>[ -/]*)(?P<escape>[0-~])"
)
# What a terminal does with the sequences it draws within a line (2026-12-04): cursor forward (C), back (D), to a
# column (G); erase in the line (K) and erase characters (X) -- tracked, so what they write over or erase goes. The SGR
# (m) and the cursor's visibility (?25 h/l) draw nothing. Every other CSI -- one that moves between lines (A, B, E,
# F, H, f, d), clears the screen (J), scrolls, inserts or deletes, switches screens, or any this reader does not
# know -- and the escapes that reset the terminal or move between lines (ESC c, D, E, M, 7, 8, #...) fail the text
# with their line: what a terminal shows after them is not a line-by-line reading of the file (fail closed). An
# escape that designates a character set (``ESC ( B``, as ``tput sgr0`` writes) or a keypad mode (``ESC =``, ``ESC >``)
# draws nothing: cut.
_IN_LINE = frozenset("CDGKX")
_HARMLESS_ESCAPES = frozenset("=>\\")
_CHARSET_INTERMEDIATES = frozenset("()*+-./")
# Cursor moves and erasures tracked in a text: at most this many empty columns looked at (a hostile text of moves
# and erasures over the holes of a long line); past it the text fails (fail closed). Erased columns do not count:
# each was written first.
MAX_CURSOR_WORK = 2_000_000
_CONTROL_START_RE = re.compile("[\x1b\x90\x98\x9b\x9d\x9e\x9f]")
_SGR_CONCEAL, _SGR_REVEAL = "8", frozenset({"", "0", "28"})
# xterm's default palette for the 16 basic colours (30-37 and 90-97 foreground, 40-47 and 100-107 background).
_PALETTE = ((0, 0, 0), (205, 0, 0), (0, 205, 0), (205, 205, 0), (0, 0, 238), (205, 0, 205), (0, 205, 205),
            (229, 229, 229), (127, 127, 127), (255, 0, 0), (0, 255, 0), (255, 255, 0), (92, 92, 255),
            (255, 0, 255), (0, 255, 255), (255, 255, 255))


def _sgr(params: str) -> list[tuple[str, list[str]]]:
    """The attribute codes of an SGR sequence's parameters, each with the arguments of an extended colour: in
    ``38;5;8`` (colour 8 of 256) and ``48;2;0;0;0`` (a true colour) the 8 and the 0s are a colour, not conceal or
    reset (read as codes, a colour concealed a log's text, or a colour of 0 ended a conceal early); a colon group
    (``38:5:8``, ``38:2::0:0:0``) is one code with its arguments."""
    parts = params.split(";")
    codes: list[tuple[str, list[str]]] = []
    i = 0
    while i < len(parts):
        code, *arguments = parts[i].split(":")
        if not arguments and code in ("38", "48", "58") and i + 1 < len(parts):
            taken = {"5": 2, "2": 4}.get(parts[i + 1], 0)
            arguments = parts[i + 1:i + 1 + taken]
            i += taken
        codes.append((code, arguments))
        i += 1
    return codes


def _colour(code: str, arguments: list[str]) -> tuple[int, int, int] | None:
    """The colour an SGR colour code sets (basic colours as xterm's palette, 256 colours by the xterm cube and
    greys, true colours as given), or None (a default, or not one read here)."""
    number = int(code) if code.isdigit() else -1
    if 30 <= number <= 37 or 40 <= number <= 47:
        return _PALETTE[number % 10]
    if 90 <= number <= 97 or 100 <= number <= 107:
        return _PALETTE[number % 10 + 8]
    values = [int(a) if a.isdigit() else None for a in arguments]
    if values[:1] == [5] and len(values) >= 2 and values[1] is not None and values[1] < 256:
        index = values[1]
        if index < 16:
            return _PALETTE[index]
        if index < 232:
            steps = (0, 95, 135, 175, 215, 255)
            index -= 16
            return steps[index // 36], steps[index // 6 % 6], steps[index % 6]
        return (8 + 10 * (index - 232),) * 3  # type: ignore[return-value]
    if values[:1] == [2] and len(values) >= 4 and all(v is not None and v < 256 for v in values[-3:]):
        red, green, blue = values[-3:]
        return red, green, blue  # type: ignore[return-value]
    return None


def _same_colour(foreground: tuple[int, int, int] | None, background: tuple[int, int, int] | None) -> bool:
    """Whether text of ``foreground`` on ``background`` (both set: the terminal's own colours are not known here) is
    unreadable: a contrast under :data:`~ingestion.parsers.css_visibility.MIN_CONTRAST`, as in HTML."""
    if foreground is None or background is None:
        return False
    from ingestion.parsers.css_visibility import MIN_CONTRAST, contrast

    return contrast((*(v / 255 for v in foreground), 1.0), (*(v / 255 for v in background), 1.0)) < MIN_CONTRAST


_OVERWRITING_CR_RE = re.compile(r"\r[^\r\n]")  # a carriage return with text after it on its line
_TAB_STOP = 8


def _columns(char: str) -> int:
    """The terminal columns a character takes: 2 for East Asian wide and full-width ones, 0 for a combining mark."""
    if unicodedata.combining(char):
        return 0
    return 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1


def without_controls(text: str) -> str:
    """``text`` without its terminal control sequences and strings (:data:`_CONTROL_RE`), what they conceal kept and
    the line breaks inside them too (the lines stay numbered as the file's): what
    :func:`~ingestion.parsers.access_markers.reject_unread_markers` reads besides the text it is given (attack20b:
    ``ESC[8m# access: restricted ESC[0m`` starts its line neither on the file as written nor in the text shown)."""
    if _CONTROL_START_RE.search(text) is None:
        return text
    return _CONTROL_RE.sub(lambda m: "\n" * m[0].count("\n"), text)


def terminal_hidden(text: str, *, carriage_returns: bool = False) -> list[tuple[int, int]]:
    """What of a plain-text file a terminal never shows (found attacking hidden text, 2026-12-03; ``cat`` of the
    file draws none of it, and it reached the model): ANSI control sequences (``ESC [ ... m``: a colour, a
    cursor move -- the escape character alone was removed, its parameters stayed), control strings up to their
    terminator (OSC ``ESC ] ... BEL``, DCS, SOS, PM, APC: a window title or a hyperlink's address; 2026-12-04,
    only the introducer was removed before), the text they conceal
    (``ESC[8m`` up to ``ESC[0m``, ``ESC[28m`` or ``ESC[m``), text whose colour is its background's (2026-12-03:
    ``ESC[30;40m``, ``ESC[37;47m``, 256-colour and true-colour pairs; both set, a contrast under 1.2: up to a
    reset of either, ``39``, ``49`` or ``0``), and a character a backspace overstrikes (``a\bb``
    shows ``b``; a man page's ``_\bX`` and ``X\bX`` show ``X``: the later character stays).

    ``carriage_returns`` (plain text, 2026-12-03): in a text with line feeds, a carriage return not followed by one
    sends the cursor back to the line's start, and what follows overwrites what it drew (``visible words\rHIDDEN``
    shows ``HIDDENe words``, ``AAAAAAAA\rBB`` shows ``BBAAAAAA``): the characters written over go, the later ones
    and the carriage return (a line break to a browser or an editor) stay. A text without any line feed is a file
    of old Mac line endings: its carriage returns are line breaks, nothing is overwritten. Columns are a terminal's:
    a tab moves to the next stop of 8 without writing, a wide character takes two, a combining mark none, a control
    sequence none.

    Cursor moves and erasures within a line (2026-12-04): ``ESC[nC``/``D``/``G`` move the cursor, ``ESC[nK`` and
    ``ESC[nX`` erase; what they let be written over or erase goes. A sequence that moves between lines, clears the
    screen or is not one of these (nor an SGR, nor the cursor's visibility) raises :class:`ParseError` naming its
    line (:data:`_IN_LINE`, :func:`_unfollowed`)."""
    overwrite = carriage_returns and "\n" in text and _OVERWRITING_CR_RE.search(text) is not None
    if _CONTROL_START_RE.search(text) is None and "\b" not in text and not overwrite:
        return []
    ranges: list[tuple[int, int]] = []
    concealed = False
    foreground: tuple[int, int, int] | None = None
    background: tuple[int, int, int] | None = None
    hidden_from: int | None = None
    sequences: list[tuple[int, int]] = []  # the control sequences: no column on a terminal
    moves: dict[int, tuple[str, str]] = {}  # by a sequence's start: (final, parameters) of one tracked in a line
    for match in _CONTROL_RE.finditer(text):
        ranges.append(match.span())
        sequences.append(match.span())
        if match["escape"] is not None:
            if not (match["intermediate"] and match["intermediate"][0] in _CHARSET_INTERMEDIATES
                    or not match["intermediate"] and match["escape"] in _HARMLESS_ESCAPES):
                _unfollowed(text, match.start(), f"ESC {match['intermediate']}{match['escape']}")
            continue
        if match["final"] is not None and match["final"] != "m":
            final, params = match["final"], match["params"]
            if final in _IN_LINE and not match["middle"] and (params.isdigit() or params == ""):
                moves[match.start()] = (final, params)
            elif not (final in "hl" and params in ("?25", "?12") and not match["middle"]):
                _unfollowed(text, match.start(), f"ESC [{params}{match['middle']}{final}")
            continue
        if match["final"] != "m":
            continue  # a control string
        for code, arguments in _sgr(match["params"]):  # in order, as a terminal applies them: "8;0" conceals nothing
            number = int(code) if code.isdigit() else -1
            if code == _SGR_CONCEAL:
                concealed = True
            elif code in _SGR_REVEAL:
                concealed = False
                if code != "28":  # a reset: the colours too
                    foreground = background = None
            elif 30 <= number <= 39 or 90 <= number <= 97:  # 39: the default (unknown here)
                foreground = _colour(code, arguments)
            elif 40 <= number <= 49 or 100 <= number <= 107:
                background = _colour(code, arguments)
        hidden = concealed or _same_colour(foreground, background)
        if hidden and hidden_from is None:
            hidden_from = match.end()
        elif not hidden and hidden_from is not None:
            ranges.append((hidden_from, match.start()))
            hidden_from = None
    if hidden_from is not None:
        ranges.append((hidden_from, len(text)))
    starts = [start for start, _ in sequences]
    moved = sorted(moves)
    work = [MAX_CURSOR_WORK]
    position = 0
    for line in text.split("\n"):
        end = position + len(line)
        if "\b" in line or (overwrite and "\r" in line) or \
                bisect.bisect_left(moved, position) < bisect.bisect_left(moved, end):
            columns: dict[int, int] = {}  # the offset of the character each column of the line shows
            cursor = 0
            right = [-1]  # at least the rightmost column written (:func:`_move`)
            offset = position
            following = bisect.bisect_right(starts, position) - 1
            if following >= 0 and sequences[following][1] > position:
                offset = sequences[following][1]  # the line starts inside a control string of the line before
            following = bisect.bisect_left(starts, offset)
            while offset < end:
                stop = starts[following] if following < len(starts) and starts[following] < end else end
                if offset < stop:
                    cursor = _write(text, offset, stop, cursor, columns, ranges, right, overwrite)
                if stop == end:
                    break
                if stop in moves:
                    cursor = _move(text, stop, moves[stop], cursor, columns, ranges, work, right)
                offset = sequences[following][1]
                following += 1
        position = end + 1
    return merge_ranges(ranges)


_PLAIN_RUN_RE = re.compile("[ -~]+")  # printable ASCII: one column a character


def _write(text: str, start: int, stop: int, cursor: int, columns: dict[int, int], ranges: list[tuple[int, int]],
           right: list[int], overwrite: bool) -> int:
    """Write ``text[start:stop]`` (no control sequence in it) on a line at column ``cursor``: each character written
    over goes to ``ranges``; the cursor's new column. A run of printable ASCII past everything written is one update."""
    i = start
    while i < stop:
        run = _PLAIN_RUN_RE.match(text, i, stop)
        if run is not None:
            n = run.end() - i
            if cursor > right[0]:  # nothing written at or after the cursor: nothing written over
                columns.update(zip(range(cursor, cursor + n), range(i, i + n), strict=True))
            else:
                for k in range(n):
                    written = columns.get(cursor + k)
                    if written is not None:
                        ranges.append((written, written + 1))
                    columns[cursor + k] = i + k
            cursor += n
            right[0] = max(right[0], cursor - 1)
            i = run.end()
            continue
        char = text[i]
        if char == "\b":
            ranges.append((i, i + 1))
            cursor = max(0, cursor - 1)
        elif char == "\r" and overwrite:
            cursor = 0
        elif char == "\t":
            cursor = (cursor // _TAB_STOP + 1) * _TAB_STOP
        else:
            width = _columns(char)
            for column in range(cursor, cursor + width):
                if column in columns:
                    ranges.append((columns[column], columns[column] + 1))
                columns[column] = i
            cursor += width
            right[0] = max(right[0], cursor - 1)
        i += 1
    return cursor


def _unfollowed(text: str, offset: int, sequence: str) -> None:
    """Fail the text at a control sequence whose effect is not a line-by-line reading of it (fail closed)."""
    raise ParseError(f"terminal control sequence {sequence!r} moves the cursor between lines, clears the screen or "
                     "is not one this reader follows: what a terminal shows is not the file's text, remove it",
                     line=text.count("\n", 0, offset) + 1)


def _move(text: str, offset: int, move: tuple[str, str], cursor: int, columns: dict[int, int],
          ranges: list[tuple[int, int]], work: list[int], right: list[int]) -> int:
    """Apply a cursor move or erasure in a line (:data:`_IN_LINE`) at ``offset``: the cursor's new column; what it
    erases is added to ``ranges`` and leaves ``columns``. ``right``: at least the rightmost column written (lowered
    by an erasure to the end or of the line). Columns looked at that hold nothing count against ``work`` (those that
    are erased were written first: their cost is the text's own length)."""
    final, params = move
    number = int(params) if params else None
    if final == "C":
        return cursor + (number or 1)
    if final == "D":
        return max(0, cursor - (number or 1))
    if final == "G":
        return max(0, (number or 1) - 1)
    if final == "K":
        mode = number or 0
        if mode > 2:
            _unfollowed(text, offset, f"ESC [{params}K")
        first, last = (cursor, right[0]) if mode == 0 else (0, cursor) if mode == 1 else (0, right[0])
    else:  # X: erase characters from the cursor on, without moving it
        first, last = cursor, min(right[0], cursor + (number or 1) - 1)
    if last >= first and columns:
        if last - first + 1 <= len(columns):
            looked, candidates = last - first + 1, range(first, last + 1)
        else:
            looked, candidates = len(columns), [column for column in columns if first <= column <= last]
        erased = 0
        for column in candidates:
            written = columns.pop(column, None)
            if written is not None:
                ranges.append((written, written + 1))
                erased += 1
        work[0] -= looked - erased
        if work[0] < 0:
            raise ParseError(f"terminal cursor moves and erasures past {MAX_CURSOR_WORK:,} empty columns looked at: "
                             "too costly to follow", line=text.count("\n", 0, offset) + 1)
    if final == "K" and mode != 1:
        right[0] = min(right[0], cursor - 1) if mode == 0 else -1
    return cursor


def terminal_shown(text: str) -> tuple[str, int]:
    """``text`` as a terminal shows it, for a parser that reads its structure from the text shown (CSV: the cells a
    row's embed text is built from): what :func:`terminal_hidden` finds cut out but line breaks (a terminal still
    breaks the line a concealed run spans, so line numbers stay), and how many characters went (:func:`counted`).
    A marker in what is cut is the caller's to check on ``text`` first."""
    ranges = [(start + piece.start(), start + piece.end()) for start, end in terminal_hidden(text)
              for piece in re.finditer(r"[^\r\n]+", text[start:end])]
    return _cut(text, ranges), sum(counted(text[start:end]) for start, end in ranges)


def strip_invisible(doc: ParsedDocument) -> ParsedDocument:
    """``doc`` without invisible characters in its text (spans mapped, counts added) or its strings (in place)."""
    remove_ranges(doc, invisible_ranges(doc.text))
    doc.title = clean_string(doc.title) if doc.title else doc.title
    # Every title a member may be shown as the document's (twentieth session, attack20: left alone, a second H1 of tag
    # characters reached its section's title candidate -- a reader's document title -- while its heading lost them).
    doc.title_candidates = [(key, clean_string(title)) for key, title in doc.title_candidates]
    doc.tags = tuple(clean_string(tag) for tag in doc.tags)
    doc.metadata = _clean_value(doc.metadata)  # type: ignore[assignment]
    for section in doc.sections:
        section.title = clean_string(section.title)
        section.heading_path = tuple(clean_string(title) for title in section.heading_path)
        section.context = clean_string(section.context)
        section.context_parts = tuple((key, clean_string(line)) for key, line in section.context_parts)
        section.metadata = _clean_value(section.metadata)  # type: ignore[assignment]
        blocks = []
        for block in section.blocks:
            embed_text = clean_string(block.embed_text) if block.embed_text else block.embed_text
            metadata = _clean_value(block.metadata) if block.metadata else block.metadata
            if embed_text is not block.embed_text or metadata is not block.metadata:
                block = dataclasses.replace(block, embed_text=embed_text, metadata=metadata)  # type: ignore[arg-type]
            blocks.append(block)
        section.blocks = blocks
    return doc
